package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/layer"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func sessionService(t *testing.T, eng *fakeEngine) *sandboxrun.Service {
	t.Helper()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: eng, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	return svc
}

// TestConnectionWorkspace: a connection's files and runs share one
// workspace, another connection has its own, and it goes with the client.
func TestConnectionWorkspace(t *testing.T) {
	eng := &fakeEngine{}
	eng.run = func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		// What the runner's hand-back does: the run wrote a file, and its
		// change layer goes to the session.
		var l bytes.Buffer
		lw := layer.NewWriter(&l)
		require.NoError(t, lw.File("out.txt", 0o644, time.Now(), 4, strings.NewReader("made")))
		require.NoError(t, lw.Close())
		res := result(spec, 0, "done", "")
		var err error
		res.Files, err = spec.Changes.ApplyChanges(context.Background(), &l)
		require.NoError(t, err)
		return res, nil
	}
	svc := sessionService(t, eng)
	srv := mcp.NewServer(svc)
	one, two := connect(t, srv, nil), connect(t, srv, nil)

	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n'}
	res := mcptest.Call(t, one, mcp.ToolWriteFile, map[string]any{"path": "in/data.bin", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"})
	require.False(t, res.IsError, mcptest.Text(res))
	res = mcptest.Call(t, one, mcp.ToolWriteFile, map[string]any{"path": "notes.md", "content": "héllo"})
	require.False(t, res.IsError, mcptest.Text(res))

	res = mcptest.Call(t, one, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(1)"})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Contains(t, mcptest.Text(res), "out.txt: created (4 bytes)")
	var pr sandboxrun.PythonResult
	structured(t, res, &pr)
	require.Len(t, pr.Files, 1)
	spec := eng.ran()[0]
	require.True(t, spec.WorkspaceWritable)
	require.FileExists(t, filepath.Join(spec.Workspace, "in", "data.bin"))

	res = mcptest.Call(t, one, mcp.ToolReadFile, map[string]any{"path": "in/data.bin", "encoding": "base64"})
	var got mcp.ReadFileOutput
	structured(t, res, &got)
	require.Equal(t, base64.StdEncoding.EncodeToString(bin), got.Content)
	res = mcptest.Call(t, one, mcp.ToolReadFile, map[string]any{"path": "in/data.bin"})
	require.True(t, res.IsError, "binary as text is refused")
	require.Contains(t, mcptest.Text(res), "base64")
	res = mcptest.Call(t, one, mcp.ToolReadFile, map[string]any{"path": "out.txt"})
	require.Equal(t, "made", mcptest.Text(res))

	var list mcp.ListFilesOutput
	structured(t, mcptest.Call(t, one, mcp.ToolListFiles, map[string]any{}), &list)
	var paths []string
	for _, e := range list.Files {
		paths = append(paths, e.Path)
	}
	require.Equal(t, []string{"in", "in/data.bin", "notes.md", "out.txt"}, paths)

	// The other connection sees none of it.
	structured(t, mcptest.Call(t, two, mcp.ToolListFiles, map[string]any{}), &list)
	require.Empty(t, list.Files)
	res = mcptest.Call(t, two, mcp.ToolReadFile, map[string]any{"path": "notes.md"})
	require.True(t, res.IsError)

	for _, bad := range []string{"../x", "/etc/passwd", "a\\b", "%2e%2e/x", ""} {
		res = mcptest.Call(t, one, mcp.ToolWriteFile, map[string]any{"path": bad, "content": "x"})
		require.True(t, res.IsError, bad)
		require.Contains(t, mcptest.Text(res), "bad path", bad)
	}

	// Disconnecting removes the workspace.
	sessions, err := svc.For(sandboxrun.Caller{Owner: "mcp"}).Sessions()
	require.NoError(t, err)
	require.Len(t, sessions, 2)
	require.NoError(t, one.Close())
	require.Eventually(t, func() bool {
		_, err := os.Stat(spec.Workspace)
		return os.IsNotExist(err)
	}, 5*time.Second, 10*time.Millisecond, "the folder goes with the client")
	sessions, err = svc.For(sandboxrun.Caller{Owner: "mcp"}).Sessions()
	require.NoError(t, err)
	require.Len(t, sessions, 1, "the other connection's stays")
}

func TestFileToolsWithoutSessions(t *testing.T) {
	cs := session(t, service(t, &fakeEngine{}))
	res := mcptest.Call(t, cs, mcp.ToolWriteFile, map[string]any{"path": "a.txt", "content": "x"})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "--sessions DIR")
	res = mcptest.Call(t, cs, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(1)"})
	require.False(t, res.IsError, "runs still work, without a workspace")
}

func TestReadFileBound(t *testing.T) {
	svc := sessionService(t, &fakeEngine{})
	cs := connect(t, mcp.NewServer(svc), nil)
	big := make([]byte, mcp.MaxReadBytes+1)
	res := mcptest.Call(t, cs, mcp.ToolWriteFile, map[string]any{"path": "big.bin", "content": base64.StdEncoding.EncodeToString(big), "encoding": "base64"})
	require.False(t, res.IsError, mcptest.Text(res))
	res = mcptest.Call(t, cs, mcp.ToolReadFile, map[string]any{"path": "big.bin", "encoding": "base64"})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "over the 4194304-byte limit")
}
