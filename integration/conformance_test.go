//go:build integration

package integration

import (
	"testing"

	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// TestConformance runs the backend-neutral contract against the Docker
// runner; sandbox/kube's tests run the same cases on a cluster.
func TestConformance(t *testing.T) {
	t.Parallel()
	sandboxtest.Run(t, sandboxtest.Env{
		Runner: runner,
		Gone:   func(t *testing.T, runID string) { requireNoContainer(t, runner, runID) },
	})
}
