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

// apiServer is the kubernetes Service's address on the test cluster (the
// first of hack/k8s-up.sh's Service range) and port.
const apiServer = "10.97.0.1:443"

// TestIsolationByEnforcedPolicy: on the Pod network a sandbox Pod has
// eth0, so a run without network needs the connect probe, with the
// cluster DNS (CoreDNS, a Pod behind kube-dns) and a listening Pod as its
// targets. Without the chart's deny-all policy the probe Pod made like a
// sandbox Pod reaches both and the run is refused; with it, both are
// refused to that Pod and reached by the control Pod, and the run runs.
// The API server, on the node's own address, the enforcer leaves open:
// the probe's default target, it is found and the run refused; the other
// runners here turn it off, as the chart's podnet values do.
func TestIsolationByEnforcedPolicy(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	ns := namespace(t, c, "sbx-iso-")
	dns := clusterDNS(t, c) + ":53"
	startListener(t, c, ns)
	ip := waitReady(t, c, ns, "listener")
	listener := ip + ":8080"
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(os.Getenv("SANDBOXRUN_K8S_RUN"), "admin.kubeconfig"))
	require.NoError(t, err)
	newRunner := func(api bool, targets ...string) *kubebackend.Runner {
		k, err := kubebackend.New(kubebackend.WithRESTConfig(cfg), kubebackend.WithNamespace(ns),
			kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
			kubebackend.WithIsolationTargets(targets...), kubebackend.WithClusterDNSTarget(true), kubebackend.WithAPIServerTarget(api))
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

	// No policy: the sandbox-like Pod reaches the listener and the cluster
	// DNS (and the control Pod too): refused, before any sandbox Pod of
	// the run.
	res, err := run(newRunner(false, listener))
	require.ErrorIs(t, err, kubebackend.ErrNetworkNotIsolated)
	require.Nil(t, res)
	require.Contains(t, err.Error(), "reached "+listener+", "+dns+" (the control pod reached "+listener+", "+dns+")")
	require.Contains(t, err.Error(), "no deny-all NetworkPolicy selecting io.sandboxrun.managed=true is enforced in namespace "+ns)

	np := chartPolicy(t, ns)
	_, err = c.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{})
	require.NoError(t, err)

	// What the policy leaves open, the probe finds: the API server,
	// through the kubernetes Service (a default target, read from the
	// API), is the node's own address, which the enforcer (forwarded
	// traffic only) does not filter (docs/kubernetes.md, "No network").
	res, err = run(newRunner(true, listener))
	require.ErrorIs(t, err, kubebackend.ErrNetworkNotIsolated)
	require.Nil(t, res)
	require.Contains(t, err.Error(), "reached "+apiServer+" (the control pod reached ",
		"under the policy the sandbox-like Pod reached the API server alone: the listener and the cluster DNS are Pods, filtered")
	require.Contains(t, err.Error(), "is enforced in namespace "+ns+", but not for these addresses", "the refusal says the policy holds for the others")

	// The chart's policy with the cluster DNS and a Pod as the targets:
	// proven by the connect probe, and the run runs.
	k := newRunner(false, listener)
	res, err = run(k)
	require.NoError(t, err)
	require.True(t, res.Success, "%s %s", res.Error, res.Stderr)
	require.Equal(t, "isolated\n", res.Stdout)
	iso := k.Isolation()
	require.Equal(t, kubebackend.IsolationPolicy, iso.Mechanism)
	require.Contains(t, iso.Interfaces, "eth0")
	require.ElementsMatch(t, []string{listener, dns}, iso.Targets, "the cluster DNS is a target, and refused")

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
