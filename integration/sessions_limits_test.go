//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// Limits and lifetime of sessions: quota, idle TTL, deletion.

// writeFile writes a policy (or any) file in a fresh folder.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// TestSessionQuota: an upload past the quota is 413 and leaves nothing; a
// run writing past it hits ENOSPC, says workspace_full, and the session
// stays within its quota.
func TestSessionQuota(t *testing.T) {
	t.Parallel()
	const quota = 1 << 20
	pol := writeFile(t, "policy.yaml", "sessions:\n  quota: 1Mi\n")
	srv := startSessionServer(t, "", "--policy", pol)
	s := srv.create(t, "")
	require.EqualValues(t, quota, s.BytesLimit)
	small := randomBytes(t, 300<<10)
	srv.put(t, s.ID, "small.bin", small)
	before := treeDigest(t, srv.workspace(s.ID))

	for name, size := range map[string]int{"alone past the quota": quota + 1, "past what is left": 800 << 10} {
		t.Run(name, func(t *testing.T) {
			c := srv.do(t, "PUT", "/v1/sessions/"+s.ID+"/files/big.bin", bytes.NewReader(randomBytes(t, size)))
			require.Equal(t, http.StatusRequestEntityTooLarge, c.status, c.String())
			require.Contains(t, string(c.body), "sessions.quota", "the refusal names the limit")
			require.Equal(t, before, treeDigest(t, srv.workspace(s.ID)), "nothing of the upload stays")
			require.Empty(t, tempNames(t, srv.workspace(s.ID)))
			require.EqualValues(t, len(small), srv.info(t, s.ID).BytesUsed)
		})
	}
	// Overwriting a file is charged its growth only.
	srv.put(t, s.ID, "small.bin", randomBytes(t, 900<<10))

	res := srv.python(t, s.ID, `
import errno, os
written, full = 0, False
try:
    with open("fill.bin", "wb") as f:
        for _ in range(64):
            f.write(b"x" * 65536)
            f.flush()
            written += 65536
except OSError as e:
    full = e.errno == errno.ENOSPC
print(written, full)
`)
	require.True(t, res.Success, res.Stderr)
	require.True(t, strings.HasSuffix(strings.TrimSpace(res.Stdout), "True"), "the run saw ENOSPC: %q", res.Stdout)
	require.True(t, res.WorkspaceFull, "the Result says the workspace was full")
	info := srv.info(t, s.ID)
	require.LessOrEqual(t, info.BytesUsed, int64(quota), "the session stays within its quota")
	var used int64
	for _, e := range srv.list(t, s.ID) {
		used += e.Size * b2i(e.Type == session.TypeFile)
	}
	require.Equal(t, info.BytesUsed, used, "bytes_used is what the files hold")
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
}

// TestSessionAtItsQuotaStillRuns: a session whose files fill its quota
// still runs: reading and printing work, writing fails with ENOSPC, and
// nothing answers 500.
func TestSessionAtItsQuotaStillRuns(t *testing.T) {
	t.Parallel()
	const quota = 1 << 20
	pol := writeFile(t, "policy.yaml", "sessions:\n  quota: 1Mi\n")
	srv := startSessionServer(t, "", "--policy", pol)
	s := srv.create(t, "")
	srv.put(t, s.ID, "full.bin", randomBytes(t, quota))
	before := treeDigest(t, srv.workspace(s.ID))

	res := srv.python(t, s.ID, `
import errno, os
print(os.path.getsize("full.bin"))
try:
    with open("more.bin", "wb") as f:
        f.write(b"x" * (1 << 20))
        f.flush()
    print("wrote")
except OSError as e:
    print(errno.errorcode[e.errno])
if os.path.exists("more.bin"):
    os.remove("more.bin")
`)
	require.True(t, res.Success, res.Stderr)
	require.Equal(t, "1048576\nENOSPC\n", res.Stdout)
	require.Empty(t, res.Files)
	require.Equal(t, before, treeDigest(t, srv.workspace(s.ID)))
	require.EqualValues(t, quota, srv.info(t, s.ID).BytesUsed)
}

// TestSessionRunPastTheQuotaKeepsWhatFits: a run that writes more than
// the session's quota leaves room for (the volume keeps a few pages past
// a nearly full session's files) answers 200, never 413 or 500: the
// session keeps what fits, each file whole (the small file), leaves out
// what does not (the big one, which the script wrote without ENOSPC),
// stays within its quota, and the Result says so.
func TestSessionRunPastTheQuotaKeepsWhatFits(t *testing.T) {
	t.Parallel()
	const quota = 1 << 20
	pol := writeFile(t, "policy.yaml", "sessions:\n  quota: 1Mi\n")
	srv := startSessionServer(t, "", "--policy", pol)
	s := srv.create(t, "")
	almost := randomBytes(t, quota-8<<10)
	srv.put(t, s.ID, "almost.bin", almost)
	c := srv.pythonCall(t, s.ID, `open("more.bin", "wb").write(b"x" * 12288); open("note.txt", "w").write("kept"); print("wrote")`)
	require.Equal(t, http.StatusOK, c.status, c.String())
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(c.body, &res))
	require.Equal(t, "wrote\n", res.Stdout, "the script saw no error")
	require.True(t, res.WorkspaceFull)
	require.False(t, res.Success)
	require.Contains(t, res.Error, `1 file(s) were not kept: "more.bin"`)
	require.Contains(t, res.Error, "sessions.quota", "the Result names the limit and how to raise it")
	require.Len(t, res.Files, 1)
	require.Equal(t, "note.txt", res.Files[0].Path)

	require.Equal(t, []byte("kept"), srv.get(t, s.ID, "note.txt"))
	require.Equal(t, almost, srv.get(t, s.ID, "almost.bin"))
	require.NoFileExists(t, filepath.Join(srv.workspace(s.ID), "more.bin"))
	require.Empty(t, tempNames(t, srv.workspace(s.ID)))
	require.LessOrEqual(t, srv.info(t, s.ID).BytesUsed, int64(quota), "the session stays within its quota")
	again := srv.python(t, s.ID, `print("still runs")`)
	require.True(t, again.Success, again.Stderr)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestSessionTTLExpiry: a session idle past the policy's TTL is 404 at
// once and its folder is removed soon after; using it keeps it alive.
func TestSessionTTLExpiry(t *testing.T) {
	// Serial (see main_test.go): it counts seconds, and the margin of a
	// 4 s TTL touched every second must not be eaten by other tests' load.
	pol := writeFile(t, "policy.yaml", "sessions:\n  ttl: 4s\n")
	srv := startSessionServer(t, "", "--policy", pol)
	s := srv.create(t, "")
	require.WithinDuration(t, s.CreatedAt.Add(4*time.Second), s.ExpiresAt, 10*time.Millisecond)
	srv.put(t, s.ID, "f.txt", []byte("x"))
	require.DirExists(t, srv.workspace(s.ID))

	// Used every quarter TTL for twice the TTL: alive, it is an idle TTL.
	for range 8 {
		time.Sleep(time.Second)
		srv.info(t, s.ID)
	}
	require.Equal(t, []byte("x"), srv.get(t, s.ID, "f.txt"))

	// Idle past it: refused on access, whatever the sweep did yet.
	time.Sleep(4*time.Second + 200*time.Millisecond)
	for _, path := range []string{"/v1/sessions/" + s.ID, "/v1/sessions/" + s.ID + "/files", "/v1/sessions/" + s.ID + "/files/f.txt"} {
		c := srv.do(t, "GET", path, nil)
		require.Equal(t, http.StatusNotFound, c.status, "%s: %s", path, c)
	}
	c := srv.pythonCall(t, s.ID, "print(1)")
	require.Equal(t, http.StatusNotFound, c.status, c.String())
	require.Eventually(t, func() bool {
		_, err := os.Lstat(srv.workspace(s.ID))
		return errors.Is(err, os.ErrNotExist)
	}, 5*time.Second, 50*time.Millisecond, "the expired session's folder is removed")
	_, err := os.Lstat(filepath.Join(srv.dir, "meta", s.ID+".json"))
	require.ErrorIs(t, err, os.ErrNotExist, "and its metadata")
	c = srv.do(t, "GET", "/v1/sessions", nil)
	require.JSONEq(t, `{"sessions": [], "partial": false, "unreachable": []}`, string(c.body))
}

// TestSessionDeleteCancelsItsRun: deleting a session with a run in it
// stops the run, removes its sandbox, and nothing of the run lands on disk
// afterwards (no hand-back into a removed folder).
func TestSessionDeleteCancelsItsRun(t *testing.T) {
	t.Parallel()
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	srv.put(t, s.ID, "in.txt", []byte("x"))
	started := make(chan struct{})
	ended := make(chan string, 1)
	go func() {
		body := mustJSON(t, map[string]any{"session": s.ID, "timeout": 120,
			"code": "open('partial.txt', 'w').write('p')\nimport time\nprint('started', flush=True)\ntime.sleep(100)"})
		req, _ := http.NewRequest("POST", srv.url+"/v1/skills/"+srv.skill+"/python", strings.NewReader(body))
		req.Header.Set("Accept", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ended <- err.Error()
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err == nil && strings.Contains(line, "started") {
			close(started)
		}
		rest, _ := io.ReadAll(br)
		ended <- string(rest)
	}()
	select {
	case <-started:
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not start; stderr: %s", srv.stderr)
	}
	begin := time.Now()
	c := srv.do(t, "DELETE", "/v1/sessions/"+s.ID, nil)
	require.Equal(t, http.StatusNoContent, c.status, c.String())
	select {
	case last := <-ended:
		require.NotContains(t, last, `"success":true`, "the run was stopped: %s", last)
	case <-time.After(60 * time.Second):
		t.Fatal("the run went on after its session was deleted")
	}
	require.Less(t, time.Since(begin), 60*time.Second)
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
	_, err := os.Lstat(srv.workspace(s.ID))
	require.ErrorIs(t, err, os.ErrNotExist, "the folder is gone and no hand-back made it again")
	require.Equal(t, http.StatusNotFound, srv.do(t, "GET", "/v1/sessions/"+s.ID, nil).status)
}
