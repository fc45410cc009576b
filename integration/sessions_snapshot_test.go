//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/session"
)

func (s *sessServer) snapshot(t *testing.T, id, label string) session.Snapshot {
	t.Helper()
	c := s.do(t, "POST", "/v1/sessions/"+id+"/snapshots", strings.NewReader(mustJSON(t, map[string]string{"label": label})))
	require.Equal(t, http.StatusCreated, c.status, c.String())
	var snap session.Snapshot
	require.NoError(t, json.Unmarshal(c.body, &snap))
	require.Equal(t, id, snap.Session)
	require.Equal(t, label, snap.Label)
	return snap
}

func (s *sessServer) restore(t *testing.T, id, snap string) sessionInfo {
	t.Helper()
	c := s.do(t, "POST", "/v1/sessions/"+id+"/restore", strings.NewReader(mustJSON(t, map[string]string{"snapshot": snap})))
	require.Equal(t, http.StatusOK, c.status, c.String())
	var info sessionInfo
	require.NoError(t, json.Unmarshal(c.body, &info))
	return info
}

func (s *sessServer) fork(t *testing.T, body string) sessionInfo {
	t.Helper()
	c := s.do(t, "POST", "/v1/sessions", strings.NewReader(body))
	require.Equal(t, http.StatusCreated, c.status, c.String())
	var info sessionInfo
	require.NoError(t, json.Unmarshal(c.body, &info))
	return info
}

// files reads every file of a session through the API: path → bytes.
func (s *sessServer) files(t *testing.T, id string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, e := range s.list(t, id) {
		if e.Type == session.TypeFile {
			out[e.Path] = s.get(t, id, e.Path)
		}
	}
	return out
}

// TestSessionSnapshotRestore: a restore undoes uploads, deletions and a
// run's writes (an in-place update of a file the snapshot shares
// included), five times over with every byte checked; a fork is
// independent both ways; another token sees none of it; deleting the
// session removes its snapshots.
func TestSessionSnapshotRestore(t *testing.T) {
	t.Parallel()
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	srv.put(t, s.ID, "data.bin", randomBytes(t, 2<<20))
	srv.put(t, s.ID, "notes/a.txt", []byte("first\n"))
	srv.put(t, s.ID, "gone.txt", []byte("to be deleted\n"))
	want := srv.files(t, s.ID)
	digest := treeDigest(t, srv.workspace(s.ID))

	snap := srv.snapshot(t, s.ID, "before")
	require.EqualValues(t, 2<<20+6+14, snap.Bytes)
	for i := range 5 {
		srv.put(t, s.ID, "added.txt", []byte("added\n"))
		require.Equal(t, http.StatusNoContent, srv.do(t, "DELETE", "/v1/sessions/"+s.ID+"/files/gone.txt", nil).status)
		res := srv.python(t, s.ID, `
with open("data.bin", "r+b") as f:   # in place, on the file the snapshot shares
    f.seek(100)
    f.write(b"changed by the run")
with open("notes/a.txt", "a") as f:
    f.write("more\n")
open("run-made.txt", "w").write("x")
`)
		require.True(t, res.Success, res.Stderr)
		require.NotEqual(t, sha(want["data.bin"]), sha(srv.get(t, s.ID, "data.bin")), "cycle %d: the run changed data.bin: %+v", i, res.Files)

		info := srv.restore(t, s.ID, snap.ID)
		require.Equal(t, s.ID, info.ID)
		require.Equal(t, digests(want), digests(srv.files(t, s.ID)), "cycle %d: the workspace is the snapshot again", i)
		require.Equal(t, digest, treeDigest(t, srv.workspace(s.ID)), "cycle %d: modes and folders too", i)
	}

	// A fork of the session and one of the snapshot: independent both ways.
	srv.put(t, s.ID, "after.txt", []byte("after\n"))
	fork := srv.fork(t, `{"from": {"session": "`+s.ID+`"}}`)
	fromSnap := srv.fork(t, `{"from": {"session": "`+s.ID+`", "snapshot": "`+snap.ID+`"}}`)
	require.Equal(t, digests(want), digests(srv.files(t, fromSnap.ID)))
	require.Equal(t, []byte("after\n"), srv.get(t, fork.ID, "after.txt"))
	res := srv.python(t, fork.ID, `open("data.bin", "r+b").write(b"fork")`)
	require.True(t, res.Success, res.Stderr)
	srv.put(t, s.ID, "notes/a.txt", []byte("source\n"))
	require.Equal(t, sha(want["data.bin"]), sha(srv.get(t, s.ID, "data.bin")), "the fork's run did not reach the source")
	require.Equal(t, []byte("first\n"), srv.get(t, fork.ID, "notes/a.txt"), "the source's upload did not reach the fork")
	require.Equal(t, digests(want), digests(srv.files(t, fromSnap.ID)))

	// Deleting the session removes its snapshots.
	require.Equal(t, http.StatusNoContent, srv.do(t, "DELETE", "/v1/sessions/"+s.ID, nil).status)
	_, err := os.Stat(filepath.Join(srv.dir, "snaps", s.ID))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, digests(want), digests(srv.files(t, fromSnap.ID)), "a fork outlives its source")
}

// TestSessionSnapshotsOfAnotherTokenAre404: snapshots, restores and forks
// of another token's session answer as a session that does not exist.
func TestSessionSnapshotsOfAnotherTokenAre404(t *testing.T) {
	t.Parallel()
	const tokenA, tokenB = "snap-token-a-0123456789abcdef", "snap-token-b-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte(tokenA+"\n"+tokenB+"\n"), 0o600))
	srv := startSessionServer(t, "", "--tokens", tokens)
	srv.token = tokenA
	s := srv.create(t, "")
	srv.put(t, s.ID, "secret.txt", []byte("A's data\n"))
	snap := srv.snapshot(t, s.ID, "")
	before := treeDigest(t, srv.workspace(s.ID))
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions/" + s.ID + "/snapshots", ""},
		{"GET", "/v1/sessions/" + s.ID + "/snapshots", ""},
		{"DELETE", "/v1/sessions/" + s.ID + "/snapshots/" + snap.ID, ""},
		{"POST", "/v1/sessions/" + s.ID + "/restore", `{"snapshot": "` + snap.ID + `"}`},
		{"POST", "/v1/sessions", `{"from": {"session": "` + s.ID + `"}}`},
		{"POST", "/v1/sessions", `{"from": {"session": "` + s.ID + `", "snapshot": "` + snap.ID + `"}}`},
	} {
		got := srv.doAs(t, tokenB, c.method, c.path, bytes.NewReader([]byte(c.body)))
		require.Equal(t, http.StatusNotFound, got.status, "%s %s: %s", c.method, c.path, got.String())
	}
	require.Equal(t, http.StatusNotFound, srv.do(t, "POST", "/v1/sessions/"+s.ID+"/restore", strings.NewReader(`{"snapshot": "aaaaaaaaaaaaaaaaaaaaaaaaaa"}`)).status)
	require.Equal(t, before, treeDigest(t, srv.workspace(s.ID)))
	c := srv.do(t, "GET", "/v1/sessions/"+s.ID+"/snapshots", nil)
	require.Equal(t, http.StatusOK, c.status)
	require.Contains(t, string(c.body), snap.ID)
}

// TestSessionSnapshotSurvivesSIGKILL: a snapshot taken before the server
// is killed restores after the restart.
func TestSessionSnapshotSurvivesSIGKILL(t *testing.T) {
	// Serial (see main_test.go): it kills a server.
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	srv.put(t, s.ID, "a.bin", randomBytes(t, 1<<20))
	want := srv.files(t, s.ID)
	snap := srv.snapshot(t, s.ID, "kept")
	srv.put(t, s.ID, "a.bin", []byte("changed"))
	srv.put(t, s.ID, "b.txt", []byte("new"))
	require.NoError(t, srv.cmd.Process.Kill())
	<-srv.done

	next := startSessionServer(t, srv.dir)
	c := next.do(t, "GET", "/v1/sessions/"+s.ID+"/snapshots", nil)
	require.Equal(t, http.StatusOK, c.status, c.String())
	var l struct {
		Snapshots []session.Snapshot `json:"snapshots"`
	}
	require.NoError(t, json.Unmarshal(c.body, &l))
	require.Len(t, l.Snapshots, 1)
	require.Equal(t, snap.ID, l.Snapshots[0].ID)
	next.restore(t, s.ID, snap.ID)
	require.Equal(t, digests(want), digests(next.files(t, s.ID)))
}

func digests(files map[string][]byte) map[string]string {
	out := map[string]string{}
	for p, b := range files {
		out[p] = sha(b)
	}
	return out
}
