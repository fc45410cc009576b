//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/session"
)

// The tests here drive `sandboxrun mcp --workspace DIR`: an operator's host
// folder instead of a session per connection, for the file tools and for
// every run.

// hostProject is an operator's project folder the sandbox user can read,
// with a link to / planted in it.
func hostProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# project\n"), 0o644))
	require.NoError(t, os.Symlink("/", filepath.Join(dir, "link")))
	return dir
}

// mcpPolicy writes an operator policy for the server.
func mcpPolicy(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yaml), 0o644))
	return p
}

func TestMCPWorkspaceFolder(t *testing.T) {
	dir := hostProject(t)
	// hello gets Write from the operator, so its runs may write the folder.
	pol := mcpPolicy(t, "workspace:\n  write: declared\nskills:\n  hello:\n    allowed-tools: Write\n")
	s := startMCP(t, "--policy", pol, "--workspace", dir, "--warm-pool", "0") // every container is a run's

	csv := "name,price\napple,3\npear,5\n"
	res := s.call(t, mcp.ToolWriteFile, map[string]any{"path": "in/data.csv", "content": csv})
	require.False(t, res.IsError, mcptest.Text(res))
	got, err := os.ReadFile(filepath.Join(dir, "in", "data.csv"))
	require.NoError(t, err)
	require.Equal(t, csv, string(got), "write_file wrote into the host folder")

	res = s.call(t, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "import os\n" +
		"print(os.getcwd())\n" +
		"print(open('in/data.csv').read(), end='')\n" +
		"open('out.txt', 'w').write('made by the run')\n"})
	require.False(t, res.IsError, mcptest.Text(res))
	var py sandboxrun.PythonResult
	decodeTool(t, res, &py)
	require.Equal(t, "/workspace\n"+csv, py.Stdout, "the run reads what write_file put, from /workspace")
	require.Contains(t, mcptest.Text(res), "out.txt: created")
	got, err = os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "made by the run", string(got), "the run's write is handed back to the folder")
	res = s.call(t, mcp.ToolReadFile, map[string]any{"path": "out.txt"})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Equal(t, "made by the run", mcptest.Text(res))

	// The link to / is listed as a link, never entered.
	res = s.call(t, mcp.ToolListFiles, map[string]any{})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Contains(t, mcptest.Text(res), "link -> /\n")
	var list mcp.ListFilesOutput
	decodeTool(t, res, &list)
	var paths []string
	for _, e := range list.Files {
		paths = append(paths, e.Path)
		if e.Path == "link" {
			require.Equal(t, session.TypeSymlink, e.Type)
			require.Equal(t, "/", e.Target)
		}
	}
	require.Equal(t, []string{"README.md", "in", "in/data.csv", "link", "out.txt"}, paths)

	res = s.call(t, mcp.ToolReadFile, map[string]any{"path": "link/etc/passwd"})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "symlink")
	require.NotContains(t, mcptest.Text(res), "root:")
	canary := "sandboxrun-canary-" + filepath.Base(dir)
	res = s.call(t, mcp.ToolWriteFile, map[string]any{"path": "link/tmp/" + canary, "content": "pwned"})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "symlink")
	_, err = os.Lstat(filepath.Join("/tmp", canary))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written through the link")
	res = s.call(t, mcp.ToolListFiles, map[string]any{"path": "link/etc"})
	require.True(t, res.IsError)

	s.requireNoContainers(t)
	recs := auditLines(t, s.audit)
	require.Len(t, recs, 1, "one run")
}

func TestMCPReadOnlyWorkspaceFolder(t *testing.T) {
	dir := hostProject(t)
	// Write granted to hello, yet the policy keeps workspaces read-only.
	pol := mcpPolicy(t, "workspace:\n  write: read-only\nskills:\n  hello:\n    allowed-tools: Write\n")
	s := startMCP(t, "--policy", pol, "--workspace", dir, "--warm-pool", "0") // every container is a run's
	before := folderState(t, dir)

	for _, p := range []string{"README.md", "new.txt"} {
		res := s.call(t, mcp.ToolWriteFile, map[string]any{"path": p, "content": "changed"})
		require.True(t, res.IsError, p)
		require.Contains(t, mcptest.Text(res), "read-only", p)
		require.Contains(t, mcptest.Text(res), "workspace.write", p)
	}

	res := s.call(t, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(open('README.md').read(), end='')\n" +
		"open('/workspace/new.txt', 'w').write('changed')\n"})
	require.True(t, res.IsError, "the run cannot write: %s", mcptest.Text(res))
	var py sandboxrun.PythonResult
	decodeTool(t, res, &py)
	require.Equal(t, "# project\n", py.Stdout, "the run reads the folder")
	require.Contains(t, py.Stderr, "Read-only file system")

	res = s.call(t, mcp.ToolReadFile, map[string]any{"path": "README.md"})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Equal(t, "# project\n", mcptest.Text(res))
	require.Equal(t, before, folderState(t, dir), "the read-only folder is unchanged")
	s.requireNoContainers(t)
}

// folderState describes a folder's entries and contents, links unfollowed.
func folderState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + "\n")
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	}))
	return b.String()
}
