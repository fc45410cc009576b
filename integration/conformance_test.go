//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// TestConformance runs the backend-neutral contract against the Docker
// runner; sandbox/kube's tests run the same cases on a cluster.
func TestConformance(t *testing.T) {
	t.Parallel()
	warm, err := docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(runner.Image()),
		docker.WithWarmPool(1, time.Minute), warnings())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, warm.Close()) })
	sandboxtest.Run(t, sandboxtest.Env{
		Runner: runner,
		Warm:   warm,
		Gone:   func(t *testing.T, runID string) { requireNoContainer(t, runner, runID) },
	})
}
