package backends

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

// The Kubernetes backend gives the Service what it needs.
var _ sandboxrun.Engine = (*kube.Kube)(nil)

// newKube builds the Kubernetes backend the policy's kubernetes section
// describes. It does not contact the cluster.
func newKube(pol *policy.Operator, log *slog.Logger, maxConcurrent int) (*kube.Kube, error) {
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
	}
	claims, err := resolveClaims(k8s.Claims)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", pol.Source, err)
	}
	opts = append(opts, kube.WithClaims(claims...), kube.WithHostPaths(k8s.HostPathsAllowed()))
	if k8s.Namespace != "" {
		opts = append(opts, kube.WithNamespace(k8s.Namespace))
	}
	if maxConcurrent > 0 {
		opts = append(opts, kube.WithMaxConcurrent(maxConcurrent))
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
