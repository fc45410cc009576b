package backends_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

// kubeBackend builds the backend pol selects, as a Service would.
func kubeBackend(pol *policy.Operator, maxConcurrent int) (sandboxrun.Engine, error) {
	return backends.New(sandboxrun.Config{Policy: pol, MaxConcurrent: maxConcurrent})
}

func TestNew(t *testing.T) {
	t.Run("the built-in policy runs on docker", func(t *testing.T) {
		e, err := backends.New(sandboxrun.Config{})
		require.NoError(t, err)
		d, ok := e.(*docker.Runner)
		require.True(t, ok, "got %T", e)
		require.Equal(t, sandboxrun.RunnerImage(), d.Image())
		require.NoError(t, d.Close())
	})
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	t.Run("kubernetes from a kubeconfig", func(t *testing.T) {
		pol, err := policy.ParsePolicy("p.yaml", []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+kc+"\n  namespace: sbx\n  warm: 2\n"))
		require.NoError(t, err)
		e, err := kubeBackend(pol, 3)
		require.NoError(t, err)
		k, ok := e.(*kube.Runner)
		require.True(t, ok)
		require.Equal(t, "sbx", k.Namespace())
		require.Equal(t, sandboxrun.RunnerImage(), k.Image())
		require.Equal(t, 2, k.PoolStats().Size, "the policy's warm pool")
		require.NoError(t, k.Close())
	})
	t.Run("a replica owns its Pods by its name", func(t *testing.T) {
		pol, err := policy.ParsePolicy("p.yaml", []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+kc+"\n"))
		require.NoError(t, err)
		e, err := backends.New(sandboxrun.Config{Policy: pol, Replica: "sbx-1"})
		require.NoError(t, err)
		require.Equal(t, "sbx-1", e.(*kube.Runner).Owner()[sandbox.LabelOwnerHost])
		e, err = backends.New(sandboxrun.Config{Policy: pol})
		require.NoError(t, err)
		host, _ := os.Hostname()
		require.Equal(t, host, e.(*kube.Runner).Owner()[sandbox.LabelOwnerHost], "a single server: the host's name")
	})
	t.Run("claims name folders as the skills' paths will", func(t *testing.T) {
		dir := t.TempDir()
		real := filepath.Join(dir, "skills")
		require.NoError(t, os.Mkdir(real, 0o755))
		require.NoError(t, os.Symlink(real, filepath.Join(dir, "link")))
		pol, err := policy.ParsePolicy("p.yaml", []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+kc+
			"\n  claims: [{name: s, path: "+filepath.Join(dir, "link")+"}]\n  host_paths: false\n"))
		require.NoError(t, err)
		e, err := kubeBackend(pol, 0)
		require.NoError(t, err)
		require.Equal(t, []kube.Claim{{Name: "s", Path: real}}, e.(*kube.Runner).Claims())
	})
	t.Run("a claim's missing folder is named", func(t *testing.T) {
		pol, err := policy.ParsePolicy("p.yaml", []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+kc+
			"\n  claims: [{name: s, path: /nonexistent/skills}]\n"))
		require.NoError(t, err)
		_, err = kubeBackend(pol, 0)
		require.ErrorContains(t, err, "kubernetes.claims s: path /nonexistent/skills")
	})
	t.Run("missing kubeconfig names the file", func(t *testing.T) {
		pol, err := policy.ParsePolicy("p.yaml", []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: /nonexistent/kc\n"))
		require.NoError(t, err)
		_, err = kubeBackend(pol, 0)
		require.ErrorContains(t, err, "/nonexistent/kc")
	})
}

// Each backend says "unreachable" in its own words, and callers branch on
// the neutral sentinel.
func TestBackendsUnavailableIsNeutral(t *testing.T) {
	for _, err := range []error{docker.ErrUnavailable, kube.ErrUnavailable} {
		require.ErrorIs(t, fmt.Errorf("ping: %w", err), sandbox.ErrUnavailable, err.Error())
		require.NotErrorIs(t, err, sandbox.ErrImageNotFound)
	}
	require.Equal(t, "docker daemon unreachable", docker.ErrUnavailable.Error())
	require.Equal(t, "kubernetes API server unreachable", kube.ErrUnavailable.Error())
}
