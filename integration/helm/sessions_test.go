//go:build helm

package helm

import (
	"strings"
	"time"

	"github.com/stretchr/testify/require"
)

// sessionFile is what sessionAcrossReplicas puts in notes/in.txt; its
// run writes the same in upper case to notes/out.txt.
const sessionFile = "made through replica 1\n"

// runResult is the part of a run's Result the chart tests read.
type runResult struct {
	ExitCode int    `json:"exit_code"`
	Success  bool   `json:"success"`
	Stdout   string `json:"stdout"`
	Error    string `json:"error"`
	Files    []struct {
		Path   string `json:"path"`
		Change string `json:"change"`
	} `json:"files"`
}

// sessionAcrossReplicas makes a session through replica 0 (urls[0]),
// puts a file in it through replica 1, which forwards to the owner, runs
// a script in it through replica 1 that reads that file and writes one
// of its own (the workspace travels over the sandbox Pod's attach stream
// both ways), and reads both files back through replica 0. It returns the
// session's id.
func sessionAcrossReplicas(api *client, urls [2]string) string {
	t := api.t
	var sess struct {
		ID string `json:"id"`
	}
	api.json(api.do("POST", urls[0]+"/v1/sessions", `{"ttl": "30m"}`, 201), &sess)
	require.True(t, strings.HasPrefix(sess.ID, fullname+"-0-"), "the id names its owner: %s", sess.ID)
	api.do("PUT", urls[1]+"/v1/sessions/"+sess.ID+"/files/notes/in.txt", sessionFile, 201)
	var res runResult
	ran := time.Now()
	api.json(api.do("POST", urls[1]+"/v1/skills/hello/python",
		`{"session": "`+sess.ID+`", "code": "s = open('notes/in.txt').read().upper(); open('notes/out.txt', 'w').write(s); print(s, end='')"}`, 200), &res)
	t.Logf("a run in replica 0's session through replica 1 (reads a file, writes one): %s", time.Since(ran).Round(time.Millisecond))
	require.Equal(t, 0, res.ExitCode, res.Error)
	require.Equal(t, strings.ToUpper(sessionFile), res.Stdout)
	require.Len(t, res.Files, 1)
	require.Equal(t, "notes/out.txt", res.Files[0].Path)
	require.Equal(t, "created", res.Files[0].Change)
	require.Equal(t, sessionFile, string(api.do("GET", urls[0]+"/v1/sessions/"+sess.ID+"/files/notes/in.txt", "", 200)))
	require.Equal(t, strings.ToUpper(sessionFile), string(api.do("GET", urls[0]+"/v1/sessions/"+sess.ID+"/files/notes/out.txt", "", 200)))
	return sess.ID
}

// snapshotsAcrossReplicas snapshots replica 0's session id through
// replica 1, changes the session, forks the snapshot through replica 1
// and checks that the fork holds the snapshot's files, that the fork and
// the session no longer see each other's changes (a run in the fork
// included), and that a restore through replica 1 brings the snapshot
// back. The fork is deleted at the end.
func snapshotsAcrossReplicas(api *client, urls [2]string, id string) {
	t := api.t
	sessURL := func(i int, sess, rest string) string { return urls[i] + "/v1/sessions/" + sess + rest }
	var snap struct {
		ID      string `json:"id"`
		Session string `json:"session"`
		Label   string `json:"label"`
		Bytes   int    `json:"bytes"`
		Files   int    `json:"files"`
	}
	start := time.Now()
	api.json(api.do("POST", sessURL(1, id, "/snapshots"), `{"label": "before"}`, 201), &snap)
	t.Logf("a snapshot of replica 0's session through replica 1: %s", time.Since(start).Round(time.Millisecond))
	require.Equal(t, id, snap.Session)
	require.Equal(t, "before", snap.Label)
	require.Equal(t, 3, snap.Files, "notes/, notes/in.txt and notes/out.txt")
	require.Equal(t, 2*len(sessionFile), snap.Bytes)
	var snaps struct {
		Snapshots []struct {
			ID string `json:"id"`
		} `json:"snapshots"`
	}
	api.json(api.do("GET", sessURL(0, id, "/snapshots"), "", 200), &snaps)
	require.Len(t, snaps.Snapshots, 1)
	require.Equal(t, snap.ID, snaps.Snapshots[0].ID)

	// The session changes after its snapshot.
	api.do("PUT", sessURL(0, id, "/files/notes/in.txt"), "changed after the snapshot\n", 201)
	api.do("DELETE", sessURL(1, id, "/files/notes/out.txt"), "", 204)

	var fork struct {
		ID string `json:"id"`
	}
	start = time.Now()
	api.json(api.do("POST", urls[1]+"/v1/sessions", `{"from": {"session": "`+id+`", "snapshot": "`+snap.ID+`"}}`, 201), &fork)
	t.Logf("a fork of that snapshot through replica 1: %s", time.Since(start).Round(time.Millisecond))
	require.NotEqual(t, id, fork.ID)
	require.True(t, strings.HasPrefix(fork.ID, fullname+"-0-"), "the replica holding the snapshot makes the fork: %s", fork.ID)
	require.Equal(t, sessionFile, string(api.do("GET", sessURL(1, fork.ID, "/files/notes/in.txt"), "", 200)), "the fork holds the snapshot's files")
	require.Equal(t, strings.ToUpper(sessionFile), string(api.do("GET", sessURL(0, fork.ID, "/files/notes/out.txt"), "", 200)))

	// Independent both ways: a run in the fork (through replica 1) and a
	// write in the session (through replica 0) each stay where they went.
	var res runResult
	api.json(api.do("POST", urls[1]+"/v1/skills/hello/python",
		`{"session": "`+fork.ID+`", "code": "open('fork.txt', 'w').write('fork only')"}`, 200), &res)
	require.Equal(t, 0, res.ExitCode, res.Error)
	require.Len(t, res.Files, 1)
	require.Equal(t, "fork.txt", res.Files[0].Path)
	api.do("GET", sessURL(1, id, "/files/fork.txt"), "", 404)
	api.do("PUT", sessURL(1, id, "/files/session.txt"), "session only", 201)
	api.do("GET", sessURL(0, fork.ID, "/files/session.txt"), "", 404)
	require.Equal(t, "changed after the snapshot\n", string(api.do("GET", sessURL(0, id, "/files/notes/in.txt"), "", 200)))
	require.Equal(t, sessionFile, string(api.do("GET", sessURL(1, fork.ID, "/files/notes/in.txt"), "", 200)))

	// A restore through replica 1: the session is the snapshot again.
	api.do("POST", sessURL(1, id, "/restore"), `{"snapshot": "`+snap.ID+`"}`, 200)
	require.Equal(t, sessionFile, string(api.do("GET", sessURL(0, id, "/files/notes/in.txt"), "", 200)))
	require.Equal(t, strings.ToUpper(sessionFile), string(api.do("GET", sessURL(0, id, "/files/notes/out.txt"), "", 200)))
	api.do("GET", sessURL(0, id, "/files/session.txt"), "", 404)

	api.do("DELETE", sessURL(1, fork.ID, ""), "", 204)
	api.do("GET", sessURL(0, fork.ID, ""), "", 404)
}
