package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/mcptest"
)

// writePolicy writes an operator policy file and returns its path.
func writePolicy(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yaml), 0o644))
	return p
}

func TestMCPWorkspaceRefusals(t *testing.T) {
	isolateEnv(t)
	t.Setenv("SANDBOXRUN_POLICY", "")
	project := t.TempDir()
	file := filepath.Join(project, "file.txt")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for name, tt := range map[string]struct {
		args []string
		msg  string
	}{
		"root":          {[]string{"--workspace", "/"}, "which holds other users' and the system's files"},
		"system folder": {[]string{"--workspace", "/etc"}, "inside the system folder /etc"},
		"missing":       {[]string{"--workspace", filepath.Join(project, "nope")}, "pass an existing directory with --workspace"},
		"a file":        {[]string{"--workspace", file}, "is not a directory; pass a directory with --workspace"},
		"with sessions": {[]string{"--workspace", project, "--sessions", t.TempDir()}, "--workspace and --sessions exclude each other"},
		"outside the policy's roots": {
			[]string{"--workspace", project, "--policy", writePolicy(t, "workspace:\n  roots: [/srv/projects]\n")},
			"is not under /srv/projects",
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := cli(t, "", append([]string{"mcp", "--skills", exampleSkills}, tt.args...)...)
			r.requireCode(t, exitRefused)
			require.Contains(t, r.stderr, tt.msg)
			require.Empty(t, r.stdout, "nothing on the protocol stream")
		})
	}
}

func callTool(ctx context.Context, t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return mcptest.Text(res), res.IsError
}

// TestMCPWorkspaceOverStdio: `sandboxrun mcp --workspace DIR` gives the
// file tools the folder (writable by write_file only when a policy file
// says workspace.write: declared), never follows a link in it, and makes
// no private sessions folder.
func TestMCPWorkspaceOverStdio(t *testing.T) {
	isolateEnv(t)
	t.Setenv("SANDBOXRUN_POLICY", "")
	project := t.TempDir()
	require.NoError(t, os.Symlink("/", filepath.Join(project, "link")))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The built-in policy leaves the folder read-only for write_file.
	srv := startStdio(ctx, t, "mcp", "--skills", exampleSkills, "--workspace", project)
	out, isErr := callTool(ctx, t, srv.cs, "write_file", map[string]any{"path": "notes/todo.txt", "content": "ship it"})
	require.True(t, isErr, out)
	require.Contains(t, out, "workspace.write: declared")
	require.NoFileExists(t, filepath.Join(project, "notes", "todo.txt"))
	srv.stop(ctx, t)

	declared := writePolicy(t, "workspace:\n  write: declared\n")
	srv = startStdio(ctx, t, "mcp", "--skills", exampleSkills, "--policy", declared, "--workspace", project)
	out, isErr = callTool(ctx, t, srv.cs, "write_file", map[string]any{"path": "notes/todo.txt", "content": "ship it"})
	require.False(t, isErr, out)
	got, err := os.ReadFile(filepath.Join(project, "notes", "todo.txt"))
	require.NoError(t, err)
	require.Equal(t, "ship it", string(got))
	out, isErr = callTool(ctx, t, srv.cs, "list_files", map[string]any{})
	require.False(t, isErr, out)
	require.Equal(t, "link -> /\nnotes/\nnotes/todo.txt (7 bytes)\n", out)
	out, isErr = callTool(ctx, t, srv.cs, "read_file", map[string]any{"path": "link/etc/passwd"})
	require.True(t, isErr)
	require.Contains(t, out, "symlink")
	des, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, des, "no private sessions folder with --workspace")
	srv.stop(ctx, t)

	pol := writePolicy(t, "workspace:\n  write: read-only\n")
	srv = startStdio(ctx, t, "mcp", "--skills", exampleSkills, "--policy", pol, "--workspace", project)
	out, isErr = callTool(ctx, t, srv.cs, "write_file", map[string]any{"path": "notes/todo.txt", "content": "overwritten"})
	require.True(t, isErr)
	require.Contains(t, out, "workspace.write")
	out, isErr = callTool(ctx, t, srv.cs, "read_file", map[string]any{"path": "notes/todo.txt"})
	require.False(t, isErr, out)
	require.Equal(t, "ship it", out, "the read-only folder is unchanged")
	srv.stop(ctx, t)
}
