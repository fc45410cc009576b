//go:build integration

package integration

import (
	"archive/tar"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	require.JSONEq(t, `{"sessions": [], "partial": false, "unreachable": []}`, string(c.body))

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
	t.Parallel()
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
