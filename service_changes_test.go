package sandboxrun_test

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// changesEngine hands back a layer through the Spec's applier, as a
// backend does once the script reported.
type changesEngine struct {
	fakeEngine
	layer   []byte
	applied bool // Spec.Changes was set
}

func (c *changesEngine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	res := &sandbox.Result{ID: "r", Skill: spec.Skill, Started: true, Success: true}
	if spec.Changes == nil {
		return res, nil
	}
	c.applied = true
	files, err := spec.Changes.ApplyChanges(ctx, bytes.NewReader(c.layer))
	res.Files = files
	return res, err
}

func layer(t *testing.T, name, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: ".wh.old", Typeflag: tar.TypeReg, Mode: 0o644}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}))
	_, err := tw.Write([]byte(body))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	return b.Bytes()
}

func TestSessionRunAppliesItsChangesThroughTheSession(t *testing.T) {
	eng := &changesEngine{layer: layer(t, "out.txt", "made by the run")}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, SessionsRoot: t.TempDir(), Runner: eng})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	st, err := sandboxrun.SessionStore(svc)
	require.NoError(t, err)
	info, err := st.Create("o", 0)
	require.NoError(t, err)
	_, err = st.PutFile("o", info.ID, "old", strings.NewReader("old bytes"))
	require.NoError(t, err)

	res, err := svc.For(sandboxrun.Caller{Owner: "o"}).RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{Session: info.ID})
	require.NoError(t, err)
	require.True(t, eng.applied, "a writable session run carries the session's applier")
	require.Equal(t, []sandbox.FileChange{
		{Path: "old", Change: sandbox.FileDeleted},
		{Path: "out.txt", Change: sandbox.FileCreated, Size: 15, SHA256: res.Files[1].SHA256},
	}, res.Files)
	got, err := st.Get("o", info.ID)
	require.NoError(t, err)
	require.Equal(t, int64(15), got.BytesUsed, "the session's count follows the applied changes")
}

func TestHostFolderRunAppliesItsChangesToTheFolder(t *testing.T) {
	skills := t.TempDir()
	dir := filepath.Join(skills, "writer")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: writer\ndescription: writes its workspace\nallowed-tools: Write\n---\nbody\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "w.py"), []byte("print(1)\n"), 0o644))
	pol, err := policy.ParsePolicy("p.yaml", []byte("workspace:\n  write: declared\n"))
	require.NoError(t, err)
	eng := &changesEngine{layer: layer(t, "out.txt", "x")}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, Policy: pol, Runner: eng, AllowSkillPaths: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "old"), []byte("old"), 0o644))

	res, err := svc.RunScript(context.Background(), "writer", "scripts/w.py", sandboxrun.Request{Workspace: ws})
	require.NoError(t, err)
	require.True(t, eng.applied)
	require.Len(t, res.Files, 2)
	require.NoFileExists(t, filepath.Join(ws, "old"))
	b, err := os.ReadFile(filepath.Join(ws, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "x", string(b))

	// A read-only workspace: no applier.
	eng.applied = false
	roPol, err := policy.ParsePolicy("p.yaml", []byte("workspace:\n  write: read-only\n"))
	require.NoError(t, err)
	ro, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, Policy: roPol, Runner: eng, AllowSkillPaths: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ro.Close()) })
	_, err = ro.RunScript(context.Background(), "writer", "scripts/w.py", sandboxrun.Request{Workspace: ws})
	require.NoError(t, err)
	require.False(t, eng.applied, "a read-only workspace gets no applier")
}

// TestSessionRunPastItsQuotaKeepsWhatFits: a run whose changes hold more
// than the session's room is no error: the Result says workspace_full and
// names the file left out, the session keeps the rest and stays within
// its quota.
func TestSessionRunPastItsQuotaKeepsWhatFits(t *testing.T) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range []struct{ name, body string }{{"a-big.bin", strings.Repeat("x", 3000)}, {"b-small.txt", "fits"}} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body))}))
		_, err := tw.Write([]byte(f.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	eng := &changesEngine{layer: b.Bytes()}
	pol, err := policy.ParsePolicy("p.yaml", []byte("sessions:\n  quota: 4Ki\n"))
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, SessionsRoot: t.TempDir(), Runner: eng, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	st, err := sandboxrun.SessionStore(svc)
	require.NoError(t, err)
	info, err := st.Create("o", 0)
	require.NoError(t, err)
	_, err = st.PutFile("o", info.ID, "held", strings.NewReader(strings.Repeat("h", 2000)))
	require.NoError(t, err)

	res, err := svc.For(sandboxrun.Caller{Owner: "o"}).RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{Session: info.ID})
	require.NoError(t, err, "changes past the quota are no refusal of the run")
	require.True(t, res.WorkspaceFull)
	require.False(t, res.Success)
	require.Contains(t, res.Error, `1 file(s) were not kept: "a-big.bin"`)
	require.Contains(t, res.Error, "sessions.quota")
	require.Equal(t, []sandbox.FileChange{{Path: "b-small.txt", Change: sandbox.FileCreated, Size: 4, SHA256: res.Files[0].SHA256}}, res.Files)
	got, err := st.Get("o", info.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2004), got.BytesUsed)
	require.LessOrEqual(t, got.BytesUsed, int64(4096))
	_, _, err = st.OpenFile("o", info.ID, "a-big.bin")
	require.ErrorIs(t, err, session.ErrFileNotFound, "the file past the quota was not kept")
}
