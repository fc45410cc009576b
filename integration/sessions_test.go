//go:build integration

package integration

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// everyByte holds every byte value, several times and in both orders, so a
// transfer that mangles any one (a text mode, a NUL cut, a UTF-8 fix-up)
// shows.
func everyByte() []byte {
	var b []byte
	for round := range 4 {
		for v := range 256 {
			if round%2 == 0 {
				b = append(b, byte(v))
			} else {
				b = append(b, byte(255-v))
			}
		}
	}
	return b
}

// TestSessionRoundTrip: upload a CSV, run data-analysis on it, have a run
// write an output, see it in Result.files, download it; binary content
// survives upload → run → download byte for byte, single files and tar.
func TestSessionRoundTrip(t *testing.T) {
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	require.EqualValues(t, 0, s.BytesUsed)
	require.Positive(t, s.BytesLimit)

	csv := []byte("city,price,quantity\nLyon,3.5,2\nParis,4.5,4\nNice,1,6\n")
	srv.put(t, s.ID, "in.csv", csv)
	require.EqualValues(t, len(csv), srv.info(t, s.ID).BytesUsed)

	// The skill's own script reads the upload from /workspace, its cwd.
	body := fmt.Sprintf(`{"script": "scripts/stats.py", "args": {"path": "in.csv"}, "session": %q}`, s.ID)
	c := srv.do(t, "POST", "/v1/skills/data-analysis/run", strings.NewReader(body))
	require.Equal(t, http.StatusOK, c.status, c.String())
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(c.body, &res))
	require.True(t, res.Success, res.Stderr)
	var stats struct {
		Rows    int `json:"rows"`
		Columns map[string]struct {
			Mean float64 `json:"mean"`
		} `json:"columns"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &stats), string(res.Output))
	require.Equal(t, 3, stats.Rows)
	require.InDelta(t, 3.0, stats.Columns["price"].Mean, 1e-9)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(c.body, &raw))
	require.JSONEq(t, `[]`, string(raw["files"]), "a run in a session that changed nothing says so: files is [], not absent")

	// A run writes an output; Result.files names it with its digest.
	code := `
import csv, json, os
with open("in.csv", newline="") as f:
    rows = list(csv.DictReader(f))
os.makedirs("out", exist_ok=True)
with open("out/result.json", "w") as f:
    json.dump({"rows": len(rows), "revenue": sum(float(r["price"]) * int(r["quantity"]) for r in rows)}, f)
`
	c = srv.do(t, "POST", "/v1/skills/data-analysis/python", strings.NewReader(mustJSON(t, map[string]string{"code": code, "session": s.ID})))
	require.Equal(t, http.StatusOK, c.status, c.String())
	require.NoError(t, json.Unmarshal(c.body, &res))
	require.True(t, res.Success, res.Stderr)
	require.Len(t, res.Files, 1, "%+v", res.Files)
	out := res.Files[0]
	require.Equal(t, "out/result.json", out.Path)
	require.Equal(t, sandbox.FileCreated, out.Change)
	got := srv.get(t, s.ID, "out/result.json")
	require.Equal(t, out.SHA256, sha(got), "Result.files has the digest of what is downloaded")
	require.EqualValues(t, len(got), out.Size)
	require.JSONEq(t, `{"rows": 3, "revenue": 31.0}`, string(got))

	// Every byte value: upload, copy inside the sandbox, download.
	bin := everyByte()
	srv.put(t, s.ID, "bin.dat", bin)
	res2 := srv.python(t, s.ID, `
import hashlib, shutil
data = open("bin.dat", "rb").read()
print(len(data), hashlib.sha256(data).hexdigest())
shutil.copyfile("bin.dat", "copy.dat")
`)
	require.True(t, res2.Success, res2.Stderr)
	require.Equal(t, fmt.Sprintf("%d %s\n", len(bin), sha(bin)), res2.Stdout, "the sandbox reads the uploaded bytes unchanged")
	ch := changes(res2)
	require.Len(t, ch, 1, "only the copy changed: %+v", res2.Files)
	require.Equal(t, sandbox.FileChange{Path: "copy.dat", Change: sandbox.FileCreated, Size: int64(len(bin)), SHA256: sha(bin)}, ch["copy.dat"])
	require.Equal(t, bin, srv.get(t, s.ID, "copy.dat"))
	require.Equal(t, bin, srv.get(t, s.ID, "bin.dat"))

	// The listing agrees with the downloads.
	l := entries(srv.list(t, s.ID))
	for p, want := range map[string][]byte{"in.csv": csv, "bin.dat": bin, "copy.dat": bin, "out/result.json": got} {
		require.Equal(t, session.TypeFile, l[p].Type, p)
		require.Equal(t, sha(want), l[p].SHA256, p)
		require.EqualValues(t, len(want), l[p].Size, p)
	}
	require.Equal(t, session.TypeDir, l["out"].Type)

	// Bulk: the workspace as a tar holds the same bytes.
	c = srv.do(t, "GET", "/v1/sessions/"+s.ID+"/files", nil, "Accept", "application/x-tar")
	require.Equal(t, http.StatusOK, c.status, c.String())
	require.Equal(t, "application/x-tar", c.header.Get("Content-Type"))
	files := readTar(t, c.body)
	require.Equal(t, map[string][]byte{"in.csv": csv, "bin.dat": bin, "copy.dat": bin, "out/result.json": got}, files)

	// A tar upload lands whole, and a run sees it.
	up := makeTar(t,
		tarEntry{hdr: tar.Header{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755}},
		tarEntry{hdr: tar.Header{Name: "data/every.bin"}, body: bin},
		tarEntry{hdr: tar.Header{Name: "data/deep/note.txt"}, body: []byte("héllo\n")},
	)
	c = srv.do(t, "PUT", "/v1/sessions/"+s.ID+"/files", bytes.NewReader(up), "Content-Type", "application/x-tar")
	require.Equal(t, http.StatusCreated, c.status, c.String())
	var put struct {
		Files []session.FileInfo `json:"files"`
	}
	require.NoError(t, json.Unmarshal(c.body, &put))
	require.Equal(t, []session.FileInfo{
		{Path: "data/deep/note.txt", Size: 7, SHA256: sha([]byte("héllo\n"))},
		{Path: "data/every.bin", Size: int64(len(bin)), SHA256: sha(bin)},
	}, put.Files)
	res3 := srv.python(t, s.ID, `import hashlib; print(hashlib.sha256(open("data/every.bin", "rb").read()).hexdigest())`)
	require.Equal(t, sha(bin)+"\n", res3.Stdout)
	require.Equal(t, bin, srv.get(t, s.ID, "data/every.bin"))
	eventuallyNoContainers(t, sandbox.LabelSkill+"=data-analysis")
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
}

// TestSessionStateAcrossCalls: what one run leaves, the next sees; each
// Result says what it created, modified and deleted, and the listing agrees.
func TestSessionStateAcrossCalls(t *testing.T) {
	srv := startSessionServer(t, "")
	s := srv.create(t, "")

	res := srv.python(t, s.ID, `
open("a.txt", "w").write("one\n")
open("b.txt", "w").write("bee\n")
`)
	require.True(t, res.Success, res.Stderr)
	ch := changes(res)
	require.Len(t, ch, 2, "%+v", res.Files)
	require.Equal(t, sandbox.FileChange{Path: "a.txt", Change: sandbox.FileCreated, Size: 4, SHA256: sha([]byte("one\n"))}, ch["a.txt"])
	require.Equal(t, sandbox.FileChange{Path: "b.txt", Change: sandbox.FileCreated, Size: 4, SHA256: sha([]byte("bee\n"))}, ch["b.txt"])
	requireListing(t, srv, s.ID, map[string]string{"a.txt": "one\n", "b.txt": "bee\n"})

	res = srv.python(t, s.ID, `
text = open("a.txt").read()
open("a.txt", "w").write(text + "two\n")
`)
	require.True(t, res.Success, res.Stderr)
	require.Equal(t, []sandbox.FileChange{{Path: "a.txt", Change: sandbox.FileModified, Size: 8, SHA256: sha([]byte("one\ntwo\n"))}}, res.Files)
	requireListing(t, srv, s.ID, map[string]string{"a.txt": "one\ntwo\n", "b.txt": "bee\n"})

	res = srv.python(t, s.ID, `import os; os.remove("b.txt")`)
	require.True(t, res.Success, res.Stderr)
	require.Equal(t, []sandbox.FileChange{{Path: "b.txt", Change: sandbox.FileDeleted}}, res.Files)
	requireListing(t, srv, s.ID, map[string]string{"a.txt": "one\ntwo\n"})
	c := srv.do(t, "GET", "/v1/sessions/"+s.ID+"/files/b.txt", nil)
	require.Equal(t, http.StatusNotFound, c.status, c.String())

	// A file put between runs is the next run's input, and a file deleted
	// over HTTP is gone for it.
	srv.put(t, s.ID, "c.txt", []byte("sea\n"))
	require.Equal(t, http.StatusNoContent, srv.do(t, "DELETE", "/v1/sessions/"+s.ID+"/files/a.txt", nil).status)
	res = srv.python(t, s.ID, `import os; print(sorted(os.listdir("."))); print(open("c.txt").read(), end="")`)
	require.Equal(t, "['c.txt']\nsea\n", res.Stdout)
	require.Empty(t, res.Files)
	require.EqualValues(t, 4, srv.info(t, s.ID).BytesUsed)
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
}

// requireListing checks the session holds exactly want (path → content),
// folders aside.
func requireListing(t *testing.T, srv *sessServer, id string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, e := range srv.list(t, id) {
		if e.Type == session.TypeDir {
			continue
		}
		require.Equal(t, session.TypeFile, e.Type, e.Path)
		got[e.Path] = e.SHA256
	}
	wantSums := map[string]string{}
	for p, content := range want {
		wantSums[p] = sha([]byte(content))
	}
	require.Equal(t, wantSums, got)
}

// TestSessionOfAnotherTokenIs404: token B cannot see, read, write, delete
// or run in token A's session, and cannot tell it from one that does not
// exist.
func TestSessionOfAnotherTokenIs404(t *testing.T) {
	const tokenA, tokenB = "session-token-a-0123456789abcdef", "session-token-b-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte(tokenA+"\n"+tokenB+"\n"), 0o600))
	srv := startSessionServer(t, "", "--tokens", tokens)
	srv.token = tokenA
	s := srv.create(t, "")
	srv.put(t, s.ID, "secret.txt", []byte("A's data\n"))
	before := treeDigest(t, srv.workspace(s.ID))

	run := func(field, value string) string {
		return mustJSON(t, map[string]string{field: value, "session": s.ID})
	}
	tarBody := makeTar(t, tarEntry{hdr: tar.Header{Name: "x.txt"}, body: []byte("B\n")})
	tests := []struct {
		name, method, path string
		body               string
		header             []string
	}{
		{"get session", "GET", "/v1/sessions/" + s.ID, "", nil},
		{"delete session", "DELETE", "/v1/sessions/" + s.ID, "", nil},
		{"list files", "GET", "/v1/sessions/" + s.ID + "/files", "", nil},
		{"tar download", "GET", "/v1/sessions/" + s.ID + "/files", "", []string{"Accept", "application/x-tar"}},
		{"tar upload", "PUT", "/v1/sessions/" + s.ID + "/files", string(tarBody), []string{"Content-Type", "application/x-tar"}},
		{"read file", "GET", "/v1/sessions/" + s.ID + "/files/secret.txt", "", nil},
		{"write file", "PUT", "/v1/sessions/" + s.ID + "/files/secret.txt", "B was here\n", nil},
		{"write new file", "PUT", "/v1/sessions/" + s.ID + "/files/new.txt", "B\n", nil},
		{"delete file", "DELETE", "/v1/sessions/" + s.ID + "/files/secret.txt", "", nil},
		{"run", "POST", "/v1/skills/" + srv.skill + "/run", run("script", "scripts/echo.py"), nil},
		{"exec", "POST", "/v1/skills/" + srv.skill + "/exec", run("command", "python3 -c 'print(1)'"), nil},
		{"python", "POST", "/v1/skills/" + srv.skill + "/python", run("code", "open('b.txt','w').write('B')"), nil},
	}
	const other = "AAAAAAAAAAAAAAAAAAAAAA" // a well-formed id no one holds
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := srv.doAs(t, tokenB, tt.method, tt.path, strings.NewReader(tt.body), tt.header...)
			require.Equal(t, http.StatusNotFound, c.status, c.String())
			require.NotContains(t, string(c.body), "A's data")
			// The same call on a session that does not exist answers the
			// same, the id aside: no existence oracle.
			path := strings.ReplaceAll(tt.path, s.ID, other)
			body := strings.ReplaceAll(tt.body, s.ID, other)
			d := srv.doAs(t, tokenB, tt.method, path, strings.NewReader(body), tt.header...)
			require.Equal(t, d.status, c.status)
			require.Equal(t, scrubID(string(d.body), other), scrubID(string(c.body), s.ID))
		})
	}
	c := srv.doAs(t, tokenB, "GET", "/v1/sessions", nil)
	require.Equal(t, http.StatusOK, c.status, c.String())
	require.JSONEq(t, `{"sessions": []}`, string(c.body))

	require.Equal(t, before, treeDigest(t, srv.workspace(s.ID)), "nothing B did reached A's folder")
	require.Equal(t, []byte("A's data\n"), srv.get(t, s.ID, "secret.txt"))
	c = srv.do(t, "GET", "/v1/sessions", nil)
	require.Contains(t, string(c.body), s.ID)
	requireNoSkillContainers(t, srv.skill)
}

// scrubID blanks the (possibly shortened) id in an error message.
func scrubID(msg, id string) string {
	for n := len(id); n >= 6; n-- {
		msg = strings.ReplaceAll(msg, id[:n], "ID")
	}
	return msg
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// readTar returns a tar's regular files by name, failing on anything else
// but folders.
func readTar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			files[h.Name] = data
		default:
			t.Fatalf("unexpected tar entry %q of type %q", h.Name, h.Typeflag)
		}
	}
}

// TestSessionConcurrentRunsAreSerialized: two runs started at once in one
// session both keep their writes (their own files and a shared log), and
// did not overlap in time.
func TestSessionConcurrentRunsAreSerialized(t *testing.T) {
	srv := startSessionServer(t, "")
	s := srv.create(t, "")
	code := func(name string) string {
		return fmt.Sprintf(`
import time
start = time.time()
time.sleep(1.5)
with open("log.txt", "a") as f:
    f.write("%[1]s\n")
end = time.time()
open("%[1]s.txt", "w").write("%%f %%f\n" %% (start, end))
`, name)
	}
	var wg sync.WaitGroup
	results := make([]call, 2)
	for i, name := range []string{"first", "second"} {
		wg.Go(func() { results[i] = srv.pythonCall(t, s.ID, code(name)) })
	}
	wg.Wait()
	for _, c := range results {
		require.Equal(t, http.StatusOK, c.status, c.String())
		var res sandbox.Result
		require.NoError(t, json.Unmarshal(c.body, &res))
		require.True(t, res.Success, res.Stderr)
	}
	log := string(srv.get(t, s.ID, "log.txt"))
	lines := strings.Fields(log)
	require.ElementsMatch(t, []string{"first", "second"}, lines, "both runs' appends survive: %q", log)
	var spans [2][2]float64
	for i, name := range []string{"first", "second"} {
		_, err := fmt.Sscanf(string(srv.get(t, s.ID, name+".txt")), "%f %f", &spans[i][0], &spans[i][1])
		require.NoError(t, err)
	}
	a, b := spans[0], spans[1]
	require.True(t, a[1] <= b[0] || b[1] <= a[0], "the runs overlapped: %v and %v", a, b)
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+srv.skill)
}

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

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestSessionTTLExpiry: a session idle past the policy's TTL is 404 at
// once and its folder is removed soon after; using it keeps it alive.
func TestSessionTTLExpiry(t *testing.T) {
	pol := writeFile(t, "policy.yaml", "sessions:\n  ttl: 2s\n")
	srv := startSessionServer(t, "", "--policy", pol)
	s := srv.create(t, "")
	require.WithinDuration(t, s.CreatedAt.Add(2*time.Second), s.ExpiresAt, 10*time.Millisecond)
	srv.put(t, s.ID, "f.txt", []byte("x"))
	require.DirExists(t, srv.workspace(s.ID))

	// Used every half TTL for twice the TTL: alive, it is an idle TTL.
	for range 4 {
		time.Sleep(time.Second)
		srv.info(t, s.ID)
	}
	require.Equal(t, []byte("x"), srv.get(t, s.ID, "f.txt"))

	// Idle past it: refused on access, whatever the sweep did yet.
	time.Sleep(2*time.Second + 200*time.Millisecond)
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
	require.JSONEq(t, `{"sessions": []}`, string(c.body))
}

// TestSessionDeleteCancelsItsRun: deleting a session with a run in it
// stops the run, removes its sandbox, and nothing of the run lands on disk
// afterwards (no hand-back into a removed folder).
func TestSessionDeleteCancelsItsRun(t *testing.T) {
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
