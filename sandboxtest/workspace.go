package sandboxtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// writableSpec is a run whose writable workspace holds files, with the
// folder's own applier taking the changes (as the CLI's --workspace does).
func (e Env) writableSpec(t *testing.T, code string, files map[string]string, writeCap int64) (sandbox.Spec, string) {
	t.Helper()
	// A folder of its own, not Env.Workspace (which a suite may share
	// between cases): a writable workspace reaches every backend as a
	// copy, from any folder of this host.
	dir := HostDir(t)
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))  //nolint:gosec // the sandbox user reads it
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644)) //nolint:gosec // as above
	}
	f, err := session.OpenFolder(dir, session.Limits{}, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	spec := e.spec(t, code)
	spec.Workspace, spec.WorkspaceWritable, spec.Changes = dir, true, f
	spec.Limits.WorkspaceWriteBytes = writeCap
	return spec, dir
}

// WritableWorkspace checks that a run sees the workspace's files, that
// what it creates, modifies and deletes reaches the folder once it ends,
// and that the Result lists exactly that.
func WritableWorkspace(t *testing.T, e Env) {
	spec, dir := e.writableSpec(t, `import json, os
seen = open("keep.txt").read()
open("edit.txt", "w").write("new")
os.remove("gone.txt")
os.makedirs("out/deep")
open("out/deep/result.json", "w").write(json.dumps({"seen": seen}))
print(json.dumps(sorted(os.listdir("."))))
`, map[string]string{"keep.txt": "kept", "edit.txt": "old", "gone.txt": "bye", "sub/untouched.txt": "u"}, 16<<20)
	res := e.run(t, spec)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.JSONEq(t, `["edit.txt", "keep.txt", "out", "sub"]`, string(res.Output))
	require.False(t, res.WorkspaceFull)

	changes := map[string]string{}
	for _, f := range res.Files {
		changes[f.Path] = f.Change
	}
	require.Equal(t, map[string]string{
		"edit.txt":             sandbox.FileModified,
		"gone.txt":             sandbox.FileDeleted,
		"out/deep/result.json": sandbox.FileCreated,
	}, changes)

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		return string(b)
	}
	require.Equal(t, "new", read("edit.txt"))
	require.Equal(t, "kept", read("keep.txt"))
	require.Equal(t, "u", read("sub/untouched.txt"))
	require.JSONEq(t, `{"seen": "kept"}`, read("out/deep/result.json"))
	_, err := os.Stat(filepath.Join(dir, "gone.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// WorkspaceWriteCap checks that writes past the write cap fail with ENOSPC
// inside the sandbox, that the Result says the workspace is full, and
// that what was written within the cap is handed back.
func WorkspaceWriteCap(t *testing.T, e Env) {
	spec, dir := e.writableSpec(t, `import errno, json, os
out = {}
open("small.txt", "w").write("x" * 1000)
try:
    with open("big.bin", "wb") as f:
        for _ in range(64):
            f.write(b"\0" * (1 << 20))
    out["big"] = "written"
except OSError as e:
    out["big"] = errno.errorcode.get(e.errno, str(e.errno))
try:
    os.remove("big.bin")
except OSError:
    pass
print(json.dumps(out))
`, map[string]string{"already.txt": "here"}, 4<<20)
	res := e.run(t, spec)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	var got map[string]string
	require.NoError(t, json.Unmarshal(res.Output, &got), res.Stdout)
	require.Equal(t, "ENOSPC", got["big"], "writes past the cap fail inside the sandbox")
	names := []string{}
	for _, f := range res.Files {
		names = append(names, f.Path+":"+f.Change)
	}
	sort.Strings(names)
	require.Equal(t, []string{"small.txt:created"}, names)
	b, err := os.ReadFile(filepath.Join(dir, "small.txt"))
	require.NoError(t, err)
	require.Len(t, b, 1000)
}
