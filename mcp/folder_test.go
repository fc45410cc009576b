package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// policyService builds a Service for remote callers over eng with the
// operator policy in yaml, and no sessions root.
func policyService(t *testing.T, eng *fakeEngine, yaml string) *sandboxrun.Service {
	t.Helper()
	pol, err := policy.ParsePolicy("test-policy.yaml", []byte(yaml))
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: eng, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	return svc
}

// hostFolder is an operator's project folder, resolved as
// policy.ResolveWorkspace resolves it.
func hostFolder(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# project\n"), 0o644))
	return dir
}

// TestWorkspaceFolder: with WithWorkspace, the file tools and runs of every
// connection work on the operator's folder; no session is made.
func TestWorkspaceFolder(t *testing.T) {
	dir := hostFolder(t)
	eng := &fakeEngine{}
	eng.run = func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		b, err := os.ReadFile(filepath.Join(spec.Workspace, "in", "data.bin"))
		require.NoError(t, err, "the run sees what write_file put")
		return result(spec, 0, base64.StdEncoding.EncodeToString(b), ""), nil
	}
	// Write granted to hello, so its runs may write the folder.
	svc := policyService(t, eng, "skills:\n  hello:\n    allowed-tools: Write\n")
	srv := mcp.NewServer(svc, mcp.WithWorkspace(dir, true))
	one, two := connect(t, srv, nil), connect(t, srv, nil)
	require.Contains(t, one.InitializeResult().Instructions, "a folder the operator chose, shared by every call")

	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n'}
	res := mcptest.Call(t, one, mcp.ToolWriteFile, map[string]any{"path": "in/data.bin", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"})
	require.False(t, res.IsError, mcptest.Text(res))
	got, err := os.ReadFile(filepath.Join(dir, "in", "data.bin"))
	require.NoError(t, err)
	require.Equal(t, bin, got, "written into the host folder")

	res = mcptest.Call(t, one, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(1)"})
	require.False(t, res.IsError, mcptest.Text(res))
	spec := eng.ran()[0]
	require.Equal(t, dir, spec.Workspace, "the folder is the run's /workspace")
	require.True(t, spec.WorkspaceWritable, "hello is granted Write and workspace.write is declared")

	// The other connection shares the folder.
	res = mcptest.Call(t, two, mcp.ToolReadFile, map[string]any{"path": "in/data.bin", "encoding": "base64"})
	var rf mcp.ReadFileOutput
	structured(t, res, &rf)
	require.Equal(t, base64.StdEncoding.EncodeToString(bin), rf.Content)
	want := sha256.Sum256(bin)
	require.Equal(t, hex.EncodeToString(want[:]), rf.SHA256, "read_file gives the sha256 of what it read")
	require.Equal(t, int64(len(bin)), rf.Size)
	res = mcptest.Call(t, two, mcp.ToolReadFile, map[string]any{"path": "README.md"})
	require.Equal(t, "# project\n", mcptest.Text(res), "the operator's own files are readable")

	var list mcp.ListFilesOutput
	structured(t, mcptest.Call(t, two, mcp.ToolListFiles, map[string]any{}), &list)
	require.Equal(t, []string{"README.md", "in", "in/data.bin"}, entryPaths(list))

	require.ErrorIs(t, svc.For(sandboxrun.Caller{Owner: "mcp"}).SessionsOn(), sandboxrun.ErrNoSessions, "no sessions root, and none needed")

	require.NoError(t, one.Close())
	require.FileExists(t, filepath.Join(dir, "in", "data.bin"), "the folder outlives the connection")
}

func TestReadOnlyWorkspaceFolder(t *testing.T) {
	dir := hostFolder(t)
	eng := &fakeEngine{}
	svc := policyService(t, eng, "workspace:\n  write: read-only\nskills:\n  hello:\n    allowed-tools: Write\n")
	cs := connect(t, mcp.NewServer(svc, mcp.WithWorkspace(dir, false)), nil)
	require.Contains(t, cs.InitializeResult().Instructions, "read-only")

	for _, p := range []string{"README.md", "new.txt", "sub/new.txt"} {
		res := mcptest.Call(t, cs, mcp.ToolWriteFile, map[string]any{"path": p, "content": "changed"})
		require.True(t, res.IsError, p)
		require.Contains(t, mcptest.Text(res), "read-only", p)
		require.Contains(t, mcptest.Text(res), "workspace.write", "the error names the policy setting")
	}
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, des, 1, "nothing was written")
	got, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	require.Equal(t, "# project\n", string(got))

	res := mcptest.Call(t, cs, mcp.ToolReadFile, map[string]any{"path": "README.md"})
	require.Equal(t, "# project\n", mcptest.Text(res), "reading still works")

	res = mcptest.Call(t, cs, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(1)"})
	require.False(t, res.IsError, mcptest.Text(res))
	spec := eng.ran()[0]
	require.Equal(t, dir, spec.Workspace)
	require.False(t, spec.WorkspaceWritable, "workspace.write: read-only wins over the skill's Write")
}

func TestWorkspaceFolderNeverFollowsLinks(t *testing.T) {
	dir := hostFolder(t)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("top secret"), 0o600))
	require.NoError(t, os.Symlink("/", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "leak")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))
	cs := connect(t, mcp.NewServer(service(t, &fakeEngine{}), mcp.WithWorkspace(dir, true)), nil)

	var list mcp.ListFilesOutput
	structured(t, mcptest.Call(t, cs, mcp.ToolListFiles, map[string]any{}), &list)
	require.Equal(t, []string{"README.md", "leak", "link", "out"}, entryPaths(list), "links are listed, never entered")
	res := mcptest.Call(t, cs, mcp.ToolListFiles, map[string]any{})
	require.Contains(t, mcptest.Text(res), "link -> /")

	for _, p := range []string{"link/etc/passwd", "leak", "out/secret"} {
		res := mcptest.Call(t, cs, mcp.ToolReadFile, map[string]any{"path": p})
		require.True(t, res.IsError, p)
		require.Contains(t, mcptest.Text(res), "symlink", p)
		require.NotContains(t, mcptest.Text(res), "top secret", p)
		require.NotContains(t, mcptest.Text(res), "root:", p)
	}
	for _, p := range []string{"link/tmp/x", "out/secret", "out/new"} {
		res := mcptest.Call(t, cs, mcp.ToolWriteFile, map[string]any{"path": p, "content": "pwned"})
		require.True(t, res.IsError, p)
		require.Contains(t, mcptest.Text(res), "symlink", p)
	}
	res = mcptest.Call(t, cs, mcp.ToolListFiles, map[string]any{"path": "link/etc"})
	require.True(t, res.IsError)
	got, err := os.ReadFile(filepath.Join(outside, "secret"))
	require.NoError(t, err)
	require.Equal(t, "top secret", string(got))
	des, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, des, 1, "nothing written outside")
	for _, bad := range []string{"../x", "/etc/passwd", "%2e%2e/x"} {
		res = mcptest.Call(t, cs, mcp.ToolWriteFile, map[string]any{"path": bad, "content": "x"})
		require.True(t, res.IsError, bad)
		require.Contains(t, mcptest.Text(res), "bad path", bad)
	}
}

func TestUnusableWorkspaceFolder(t *testing.T) {
	eng := &fakeEngine{}
	cs := connect(t, mcp.NewServer(service(t, eng), mcp.WithWorkspace(filepath.Join(t.TempDir(), "gone"), true)), nil)
	for tool, args := range map[string]map[string]any{
		mcp.ToolWriteFile: {"path": "a.txt", "content": "x"},
		mcp.ToolReadFile:  {"path": "a.txt"},
		mcp.ToolListFiles: {},
		mcp.ToolRunPython: {"skill": "hello", "code": "print(1)"},
	} {
		res := mcptest.Call(t, cs, tool, args)
		require.True(t, res.IsError, tool)
		require.Contains(t, mcptest.Text(res), "--workspace", tool)
	}
	require.Empty(t, eng.ran(), "no run without its workspace")
}

func entryPaths(l mcp.ListFilesOutput) []string {
	out := []string{}
	for _, e := range l.Files {
		out = append(out, e.Path)
	}
	return out
}
