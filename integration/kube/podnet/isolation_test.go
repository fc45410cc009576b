//go:build podnet

package podnet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// TestIsolationByEnforcedPolicy: on the Pod network a sandbox Pod has
// eth0, so a run without network needs the connect probe. Without the
// chart's deny-all policy the probe Pod made like a sandbox Pod reaches
// the target and the run is refused; with it, the target is refused to
// that Pod and reached by the control Pod, and the run runs. The target
// is a listening Pod; the cluster DNS, which the runner finds, is left
// open by this cluster's enforcer, and the probe says so.
func TestIsolationByEnforcedPolicy(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	ns := namespace(t, c, "sbx-iso-")
	startListener(t, c, ns)
	ip := waitReady(t, c, ns, "listener")
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(os.Getenv("SANDBOXRUN_K8S_RUN"), "admin.kubeconfig"))
	require.NoError(t, err)
	newRunner := func(clusterDNS bool) *kubebackend.Runner {
		k, err := kubebackend.New(kubebackend.WithRESTConfig(cfg), kubebackend.WithNamespace(ns),
			kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
			kubebackend.WithIsolationTargets(ip+":8080"), kubebackend.WithClusterDNSTarget(clusterDNS))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, k.Close()) })
		return k
	}
	spec := sandbox.Spec{
		Skill: "t", SkillDir: sandboxtest.HostSkillDir(t, nil),
		Argv: []string{"python3", "-c", "print('isolated')"}, Limits: sandboxtest.DefaultLimits(),
	}
	run := func(k *kubebackend.Runner) (*sandbox.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		start := time.Now()
		res, err := k.Run(ctx, spec)
		t.Logf("a first run without network, its proof included: %s (%v)", time.Since(start).Round(time.Millisecond), k.Isolation())
		return res, err
	}

	// No policy: the sandbox-like Pod reaches the listener (and the
	// control Pod too): refused, before any sandbox Pod of the run.
	res, err := run(newRunner(false))
	require.ErrorIs(t, err, kubebackend.ErrNetworkNotIsolated)
	require.Nil(t, res)
	require.Contains(t, err.Error(), "reached "+ip+":8080")
	require.Contains(t, err.Error(), "(the control pod reached ")
	require.Contains(t, err.Error(), "no deny-all NetworkPolicy selecting io.sandboxrun.managed=true is enforced in namespace "+ns)

	np := chartPolicy(t, ns)
	_, err = c.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{})
	require.NoError(t, err)

	// The probe finds what the policy leaves open: CoreDNS listens on the
	// node's own address here, which the enforcer (forwarded traffic
	// only) does not filter, so with the cluster DNS as a target the
	// proof fails under the policy too (docs/kubernetes.md, "No network").
	res, err = run(newRunner(true))
	require.ErrorIs(t, err, kubebackend.ErrNetworkNotIsolated)
	require.Nil(t, res)
	require.Contains(t, err.Error(), "sandbox pod (interfaces [eth0 lo]) reached 10.97.0.10:53 (the control pod reached "+ip+":8080, 10.97.0.10:53)",
		"the sandbox-like Pod reached the node-local DNS alone: the policy stops the listening Pod")

	// The chart's policy with a Pod as the target: proven by the connect
	// probe, and the run runs.
	k := newRunner(false)
	res, err = run(k)
	require.NoError(t, err)
	require.True(t, res.Success, "%s %s", res.Error, res.Stderr)
	require.Equal(t, "isolated\n", res.Stdout)
	iso := k.Isolation()
	require.Equal(t, kubebackend.IsolationPolicy, iso.Mechanism)
	require.Contains(t, iso.Interfaces, "eth0")
	require.Equal(t, []string{ip + ":8080"}, iso.Targets)

	// Every probe Pod, control included, is gone.
	require.NoError(t, k.WaitIdle(ctx))
	require.Eventually(t, func() bool {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sandbox.LabelManaged})
		require.NoError(t, err)
		live := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		return live == 0
	}, time.Minute, 300*time.Millisecond, "probe and run pods are deleted")
}
