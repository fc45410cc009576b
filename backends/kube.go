package backends

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

// The Kubernetes backend gives the Service what it needs.
var _ sandboxrun.Engine = (*kube.Runner)(nil)

// newKube builds the Kubernetes backend the policy's kubernetes section
// describes. It does not contact the cluster.
//
// A replica of several (Config.Replica) names itself as its Pods' owner
// host: replicas may share a host name (the node's, with hostNetwork) and
// each is PID 1 of its container, so only the name tells one replica's
// Pods from another's, and Reap leaves a sibling's alone.
func newKube(pol *policy.Operator, log *slog.Logger, maxConcurrent int, replica string) (*kube.Runner, error) {
	k8s := pol.Kubernetes
	cfg, err := kube.RESTConfig(k8s.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("policy %s: backend kubernetes: %w", pol.Source, err)
	}
	opts := []kube.Option{
		kube.WithRESTConfig(cfg),
		kube.WithLogger(log),
		kube.WithVersion(sandboxrun.Version),
		kube.WithDefaultImage(sandboxrun.RunnerImage()),
		kube.WithRuntimeClass(k8s.RuntimeClass),
		kube.WithImagePullPolicy(k8s.ImagePullPolicy),
		kube.WithWarmPool(k8s.Warm, k8s.WarmIdleOrDefault()),
		kube.WithIsolationTargets(k8s.IsolationTargets...),
		kube.WithIsolationRecheck(time.Duration(k8s.IsolationRecheck)),
		kube.WithClusterDNSTarget(k8s.IsolationClusterDNS == nil || *k8s.IsolationClusterDNS),
		kube.WithAPIServerTarget(k8s.IsolationAPIServer == nil || *k8s.IsolationAPIServer),
	}
	claims, err := resolveClaims(k8s.Claims)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", pol.Source, err)
	}
	opts = append(opts, kube.WithClaims(claims...), kube.WithHostPaths(k8s.HostPathsAllowed()))
	if k8s.SendsSkills() {
		opts = append(opts, kube.WithSkillSend(k8s.SkillSendMaxOrDefault()), kube.WithSkillModesOnly(k8s.SkillModesOnly()))
	}
	if k8s.Namespace != "" {
		opts = append(opts, kube.WithNamespace(k8s.Namespace))
	}
	if maxConcurrent > 0 {
		opts = append(opts, kube.WithMaxConcurrent(maxConcurrent))
	}
	if replica != "" {
		opts = append(opts, kube.WithOwnerHost(replica))
	}
	k, err := kube.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", pol.Source, err)
	}
	return k, nil
}

// resolveClaims gives each claim's folder as the skill and workspace paths
// will name it: symlinks resolved, as sandboxrun resolves those. The
// folder must exist here, where sandboxrun reads the skills.
func resolveClaims(rules []policy.ClaimRule) ([]kube.Claim, error) {
	claims := make([]kube.Claim, 0, len(rules))
	for _, r := range rules {
		real, err := filepath.EvalSymlinks(r.Path)
		if err != nil {
			return nil, fmt.Errorf("kubernetes.claims %s: path %s: %w: mount the claim's files there on this host, or fix the path", r.Name, r.Path, err)
		}
		claims = append(claims, kube.Claim{Name: r.Name, Path: real})
	}
	return claims, nil
}
