package mcp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
)

// TestSnapshotTools: a connection saves its workspace, changes it, and
// restores it exactly; another connection cannot use its snapshots.
func TestSnapshotTools(t *testing.T) {
	srv := mcp.NewServer(sessionService(t, &fakeEngine{}))
	one, two := connect(t, srv, nil), connect(t, srv, nil)
	res := mcptest.Call(t, one, mcp.ToolWriteFile, map[string]any{"path": "notes.md", "content": "v1"})
	require.False(t, res.IsError, mcptest.Text(res))

	res = mcptest.Call(t, one, mcp.ToolSnapshot, map[string]any{"label": "before"})
	require.False(t, res.IsError, mcptest.Text(res))
	var snap sandboxrun.Snapshot
	structured(t, res, &snap)
	require.Equal(t, "before", snap.Label)
	require.Equal(t, 1, snap.Files)

	mcptest.Call(t, one, mcp.ToolWriteFile, map[string]any{"path": "notes.md", "content": "v2"})
	mcptest.Call(t, one, mcp.ToolWriteFile, map[string]any{"path": "added.md", "content": "x"})
	res = mcptest.Call(t, one, mcp.ToolRestore, map[string]any{"snapshot": snap.ID})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Equal(t, "v1", mcptest.Text(mcptest.Call(t, one, mcp.ToolReadFile, map[string]any{"path": "notes.md"})))
	require.True(t, mcptest.Call(t, one, mcp.ToolReadFile, map[string]any{"path": "added.md"}).IsError, "added since: gone")

	var list mcp.ListSnapshotsOutput
	structured(t, mcptest.Call(t, one, mcp.ToolSnapshots, map[string]any{}), &list)
	require.Len(t, list.Snapshots, 1)
	structured(t, mcptest.Call(t, two, mcp.ToolSnapshots, map[string]any{}), &list)
	require.Empty(t, list.Snapshots)
	res = mcptest.Call(t, two, mcp.ToolRestore, map[string]any{"snapshot": snap.ID})
	require.True(t, res.IsError, "another connection's snapshot is not there")
	require.Contains(t, mcptest.Text(res), "snapshot not found")
}
