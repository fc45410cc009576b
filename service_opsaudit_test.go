package sandboxrun_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/policy"
)

// TestSessionAndUploadCallsAreAudited: every call that changes what a
// caller keeps (sessions, snapshots, restores, forks, uploads, deletions)
// is a line of the audit log with the caller's owner, a failed one with
// its error; reads are not.
func TestSessionAndUploadCallsAreAudited(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath)
	require.NoError(t, err)
	pol, err := policy.ParsePolicy("p.yaml", []byte("skill_uploads:\n  allow: tokens\n  store: "+t.TempDir()+"\n"))
	require.NoError(t, err)
	svc, _ := newService(t, sandboxrun.Config{Policy: pol, SessionsRoot: t.TempDir(), Audit: log})
	owner := strings.Repeat("a", 64)
	d := svc.For(sandboxrun.Caller{Owner: owner, Remote: true})

	s1, err := d.CreateSession(0)
	require.NoError(t, err)
	_, err = d.PutFile(s1.ID, "f.txt", strings.NewReader("x"))
	require.NoError(t, err)
	snap, err := d.Snapshot(s1.ID, "one")
	require.NoError(t, err)
	_, err = d.Restore(s1.ID, snap.ID)
	require.NoError(t, err)
	s2, err := d.ForkSession(s1.ID, snap.ID, 0)
	require.NoError(t, err)
	require.NoError(t, d.DeleteSnapshot(s1.ID, snap.ID))
	require.NoError(t, d.DeleteSession(s1.ID))
	require.Error(t, d.DeleteSession(s1.ID), "a second delete finds nothing")
	_, err = d.Sessions()
	require.NoError(t, err)
	up, err := d.UploadSkill(sandboxrun.UploadTar, skillTarOf(t, map[string]string{
		"SKILL.md": "---\nname: mine\ndescription: Mine. Use it in tests.\nversion: 1.0.0\n---\nbody\n"}))
	require.NoError(t, err)
	require.NoError(t, d.DeleteSkillVersion("mine", up.Version))
	require.Error(t, d.DeleteSkill("mine"))

	want := []audit.Operation{
		{Op: audit.OpSessionCreate, Session: s1.ID},
		{Op: audit.OpSnapshot, Session: s1.ID, Snapshot: snap.ID},
		{Op: audit.OpRestore, Session: s1.ID, Snapshot: snap.ID},
		{Op: audit.OpSessionFork, Session: s2.ID, From: s1.ID, Snapshot: snap.ID},
		{Op: audit.OpSnapshotDelete, Session: s1.ID, Snapshot: snap.ID},
		{Op: audit.OpSessionDelete, Session: s1.ID},
		{Op: audit.OpSessionDelete, Session: s1.ID, Error: "failed"},
		{Op: audit.OpSkillUpload, Skill: "mine", Version: "1.0.0", SkillDigest: up.Digest},
		{Op: audit.OpSkillDelete, Skill: "mine", Version: "1.0.0"},
		{Op: audit.OpSkillDelete, Skill: "mine", Error: "failed"},
	}
	got := readOperations(t, logPath)
	require.Len(t, got, len(want))
	for i, op := range got {
		require.Equal(t, owner, op.Owner, "line %d", i)
		require.False(t, op.Time.IsZero())
		require.Equal(t, want[i].Error != "", op.Error != "", "line %d: %s", i, op.Error)
		w := want[i]
		w.Owner, w.Time, w.Error = op.Owner, op.Time, op.Error
		require.Equal(t, w, op, "line %d", i)
	}
}

func readOperations(t *testing.T, path string) []audit.Operation {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var ops []audit.Operation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var op audit.Operation
		require.NoError(t, json.Unmarshal(sc.Bytes(), &op))
		require.NotEmpty(t, op.Op, "only operations are logged here: %s", sc.Text())
		ops = append(ops, op)
	}
	return ops
}

// TestRunRecordsCarryTheOwner: a run's audit record, and a refusal's, name
// the caller's owner; the operator's own runs name none.
func TestRunRecordsCarryTheOwner(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath)
	require.NoError(t, err)
	svc, _ := newService(t, sandboxrun.Config{Audit: log})
	owner := strings.Repeat("c", 64)
	d := svc.For(sandboxrun.Caller{Owner: owner, Remote: true})
	_, err = d.RunScript(t.Context(), "hello", "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err)
	_, err = d.RunScript(t.Context(), "no-such-skill", "scripts/echo.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	_, err = svc.RunScript(t.Context(), "hello", "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err)

	recs := readAudit(t, logPath)
	require.Len(t, recs, 3)
	require.Equal(t, []string{owner, owner, ""}, []string{recs[0].Owner, recs[1].Owner, recs[2].Owner})
	require.Equal(t, []bool{false, true, false}, []bool{recs[0].Refused, recs[1].Refused, recs[2].Refused})
}
