//go:build kube

package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/doctor"
	"github.com/sandboxrun/sandboxrun/policy"
)

// On the test cluster the doctor's cluster lines pass and so does every
// isolation line but pids, which warns: Kubernetes has no per-pod pids
// field (the kubelet's podPidsLimit bounds the pod above the probe's view).
func TestDoctorOnTheCluster(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kube.yaml")
	require.NoError(t, os.WriteFile(path, []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+
		os.Getenv("SANDBOXRUN_KUBECONFIG")+"\n  namespace: "+runner.Namespace()+"\nnetwork: none\n"), 0o600))
	pol, err := policy.LoadPolicy(path)
	require.NoError(t, err)
	rep, err := doctor.Run(t.Context(), doctor.Options{Policy: pol, TempDir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "kubernetes", rep.Backend)
	require.False(t, rep.IsolationFailed(), "%+v", rep.Checks)
	require.False(t, rep.Unchecked(), "%+v", rep.Checks)
	names := map[string]doctor.Status{}
	for _, c := range rep.Checks {
		names[c.Name] = c.Status
	}
	for _, n := range []string{"cluster", "rbac_create", "rbac_delete", "network_isolation", "user", "capabilities", "interfaces", "rootfs_read_only", "workspace", "memory", "cpu", "runtime"} {
		require.Equal(t, doctor.Pass, names[n], n)
	}
	require.Equal(t, doctor.Warn, names["pids"])
}
