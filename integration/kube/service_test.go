//go:build kube

package kube

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
)

// The operator policy selects the backend; a Service on it runs a skill's
// scripts and commands with the same Result as the Docker engine gives.
func TestServiceOnPolicyBackendMatchesDocker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kube.yaml")
	require.NoError(t, os.WriteFile(path, []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+
		os.Getenv("SANDBOXRUN_KUBECONFIG")+"\n  namespace: "+runner.Namespace()+"\nnetwork: none\n"), 0o600))
	pol, err := policy.LoadPolicy(path)
	require.NoError(t, err)
	eng, err := backends.New(sandboxrun.Config{Policy: pol, MaxConcurrent: 2})
	require.NoError(t, err)
	require.IsType(t, &kubebackend.Runner{}, eng)

	skills, err := filepath.Abs("../../skills")
	require.NoError(t, err)
	onKube, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, Policy: pol, Runner: eng, Images: backends.Images()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = onKube.Close() })
	onDocker, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, Policy: policy.BuiltinPolicy(), Backend: backends.New, Images: backends.Images()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = onDocker.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		run  func(*sandboxrun.Service) (*sandbox.Result, error)
	}{
		{"script", func(s *sandboxrun.Service) (*sandbox.Result, error) {
			return s.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{Args: []byte(`{"greeting": "hi"}`)})
		}},
		{"failing command", func(s *sandboxrun.Service) (*sandbox.Result, error) {
			return s.RunCommand(ctx, "hello", "python3 -c 'import sys; print(1); sys.exit(4)'", sandboxrun.Request{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := tc.run(onKube)
			require.NoError(t, err)
			d, err := tc.run(onDocker)
			require.NoError(t, err)
			require.Equal(t, comparable(d), comparable(k))
			requirePodGone(t, k.ID)
		})
	}
}

// comparable drops what differs between any two runs (ids, timings,
// resource figures) or names the backend (image id).
func comparable(r *sandbox.Result) sandbox.Result {
	c := *r
	c.ID, c.DurationMS, c.CPUTimeMS, c.PeakRSSKB, c.ImageID = "", 0, 0, 0, ""
	c.Limits.Sources = nil
	return c
}
