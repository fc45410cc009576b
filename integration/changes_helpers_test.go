//go:build integration

package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// writable makes ws spec's writable workspace, with the host folder's
// applier taking the run's changes back (as the Service gives it).
func writable(t *testing.T, spec *sandbox.Spec, ws string) {
	t.Helper()
	f, err := session.OpenFolder(ws, session.Limits{}, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	spec.Workspace, spec.WorkspaceWritable, spec.Changes = ws, true, f
}
