//go:build integration

package integration

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// The skill upload tests drive a real `sandboxrun serve` with
// skill_uploads on: upload over HTTP, run pinned versions in real
// sandboxes, find the digest of what ran in the Result and the audit log.

const upTokenA, upTokenB = "upload-token-a-0123456789abcdef", "upload-token-b-0123456789abcdef"

type uploadServer struct {
	*liveServer
	store, audit, policy, tokens string
}

func startUploadServer(t *testing.T, store string, policyLines ...string) *uploadServer {
	t.Helper()
	dir := t.TempDir()
	if store == "" {
		store = filepath.Join(dir, "store")
	}
	u := &uploadServer{store: store, audit: filepath.Join(dir, "audit.jsonl"),
		policy: filepath.Join(dir, "policy.yaml"), tokens: filepath.Join(dir, "tokens")}
	pol := "skill_uploads:\n  allow: tokens\n  store: " + store + "\n  max_upload_bytes: 64Ki\n" + strings.Join(policyLines, "")
	require.NoError(t, os.WriteFile(u.policy, []byte(pol), 0o600))
	require.NoError(t, os.WriteFile(u.tokens, []byte(upTokenA+"\n"+upTokenB+"\n"), 0o600))
	repo, err := filepath.Abs("../skills")
	require.NoError(t, err)
	u.liveServer = startServer(t, repo, "--policy", u.policy, "--tokens", u.tokens, "--audit-log", u.audit, "--warm-pool", "0")
	u.token = upTokenA
	return u
}

func (u *uploadServer) as(tok string) *uploadServer {
	c := *u
	ls := *u.liveServer
	ls.token = tok
	c.liveServer = &ls
	return &c
}

func (u *uploadServer) do(t *testing.T, method, path, media string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u.url+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+u.token)
	if media != "" {
		req.Header.Set("Content-Type", media)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

type upVersion struct {
	Name, Version, Digest string
}

func (u *uploadServer) upload(t *testing.T, media string, body []byte, want int) upVersion {
	t.Helper()
	status, b := u.do(t, "POST", "/v1/skills", media, body)
	require.Equal(t, want, status, string(b))
	var v upVersion
	_ = json.Unmarshal(b, &v)
	return v
}

func (u *uploadServer) run(t *testing.T, ref string) (int, sandbox.Result) {
	t.Helper()
	status, b := u.do(t, "POST", "/v1/skills/"+ref+"/run", "application/json", []byte(`{"script": "scripts/say.py"}`))
	var res sandbox.Result
	if status == http.StatusOK {
		require.NoError(t, json.Unmarshal(b, &res), string(b))
	} else {
		t.Logf("%s: %d %s", ref, status, b)
	}
	return status, res
}

func sayFiles(word string) map[string]string {
	return map[string]string{
		"SKILL.md":       "---\nname: up-say\ndescription: Says a word. Use it to test uploads.\n---\nRun scripts/say.py.\n",
		"scripts/say.py": "print('" + word + "')\n",
	}
}

func sayTar(t *testing.T, word string) []byte {
	var entries []tarEntry
	for name, body := range sayFiles(word) {
		entries = append(entries, tarEntry{hdr: tar.Header{Name: "up-say/" + name}, body: []byte(body)})
	}
	return makeTar(t, entries...)
}

func sayZip(t *testing.T, word string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range sayFiles(word) {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// auditDigests maps each audited run id to its skill_digest.
func auditDigests(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			RunID       string `json:"run_id"`
			SkillDigest string `json:"skill_digest"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec.RunID != "" {
			out[rec.RunID] = rec.SkillDigest
		}
	}
	return out
}

func TestSkillUploadPinnedRuns(t *testing.T) {
	t.Parallel()
	srv := startUploadServer(t, "")
	v1 := srv.upload(t, "application/x-tar", sayTar(t, "one"), http.StatusCreated)
	require.Equal(t, "1", v1.Version)
	srv.upload(t, "application/x-tar", sayTar(t, "one"), http.StatusOK)
	v2 := srv.upload(t, "application/zip", sayZip(t, "two"), http.StatusCreated)
	require.Equal(t, "2", v2.Version)

	runIDs := map[string]string{}
	for ref, want := range map[string]struct{ out, digest string }{
		"up-say": {"two", v2.Digest}, "up-say@1": {"one", v1.Digest}, "up-say@" + v1.Digest: {"one", v1.Digest},
	} {
		status, res := srv.run(t, ref)
		require.Equal(t, http.StatusOK, status, ref)
		require.Equal(t, want.out+"\n", res.Stdout, ref)
		require.Equal(t, want.digest, res.SkillDigest, ref)
		runIDs[res.ID] = want.digest
	}
	// A later upload leaves a pinned run as it was.
	srv.upload(t, "application/zip", sayZip(t, "three"), http.StatusCreated)
	_, res := srv.run(t, "up-say@1")
	require.Equal(t, "one\n", res.Stdout)

	// An operator skill's run carries its digest too.
	status, b := srv.do(t, "POST", "/v1/skills/hello/run", "application/json", []byte(`{"script": "scripts/echo.py", "args": {"a": 1}}`))
	require.Equal(t, http.StatusOK, status, string(b))
	var op sandbox.Result
	require.NoError(t, json.Unmarshal(b, &op))
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, op.SkillDigest)
	runIDs[op.ID] = op.SkillDigest

	audited := auditDigests(t, srv.audit)
	for id, digest := range runIDs {
		require.Equal(t, digest, audited[id], "audit record of run %s", id)
	}

	// Another token: not found, whatever the form.
	b2 := srv.as(upTokenB)
	for _, ref := range []string{"up-say", "up-say@1", "up-say@" + v1.Digest} {
		status, _ := b2.run(t, ref)
		require.Equal(t, http.StatusNotFound, status, ref)
	}
	status, _ = b2.do(t, "DELETE", "/v1/skills/up-say", "", nil)
	require.Equal(t, http.StatusNotFound, status)
}

func TestSkillUploadRefusalsKeepNothing(t *testing.T) {
	t.Parallel()
	srv := startUploadServer(t, "")
	bad := map[string][]byte{
		"dot dot":   makeTar(t, tarEntry{hdr: tar.Header{Name: "SKILL.md"}, body: []byte(sayFiles("x")["SKILL.md"])}, tarEntry{hdr: tar.Header{Name: "../x"}, body: []byte("x")}),
		"absolute":  makeTar(t, tarEntry{hdr: tar.Header{Name: "/etc/x"}, body: []byte("x")}),
		"device":    makeTar(t, tarEntry{hdr: tar.Header{Name: "d", Typeflag: tar.TypeChar}}),
		"setuid":    makeTar(t, tarEntry{hdr: tar.Header{Name: "SKILL.md", Mode: 0o4755}, body: []byte(sayFiles("x")["SKILL.md"])}),
		"link out":  makeTar(t, tarEntry{hdr: tar.Header{Name: "SKILL.md"}, body: []byte(sayFiles("x")["SKILL.md"])}, tarEntry{hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}}),
		"hard link": makeTar(t, tarEntry{hdr: tar.Header{Name: "SKILL.md"}, body: []byte(sayFiles("x")["SKILL.md"])}, tarEntry{hdr: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "SKILL.md"}}),
		"too large": makeTar(t, tarEntry{hdr: tar.Header{Name: "SKILL.md"}, body: []byte(sayFiles("x")["SKILL.md"])}, tarEntry{hdr: tar.Header{Name: "big"}, body: bytes.Repeat([]byte("x"), 128<<10)}),
	}
	want := map[string]int{"too large": http.StatusRequestEntityTooLarge}
	for name, body := range bad {
		code := want[name]
		if code == 0 {
			code = http.StatusBadRequest
		}
		srv.upload(t, "application/x-tar", body, code)
	}
	srv.upload(t, "application/x-tar", makeTar(t, tarEntry{hdr: tar.Header{Name: "SKILL.md"}, body: []byte("---\nname: up-bad\n---\n")}), http.StatusUnprocessableEntity)
	srv.upload(t, "application/x-tar", makeTar(t, tarEntry{hdr: tar.Header{Name: "SKILL.md"}, body: []byte(strings.ReplaceAll(sayFiles("x")["SKILL.md"], "up-say", "hello"))}), http.StatusConflict)
	ents, err := os.ReadDir(srv.store)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{".staging", ".locks", skill.UploadStoreMarker}, names, "only the staging folder, the locks and the store's marker")
	procs, err := os.ReadDir(filepath.Join(srv.store, ".staging"))
	require.NoError(t, err)
	require.Len(t, procs, 1, "the server's own staging folder")
	staged, err := os.ReadDir(filepath.Join(srv.store, ".staging", procs[0].Name()))
	require.NoError(t, err)
	require.Len(t, staged, 1, "only the staging folder's lock: %v", staged)
}

func TestSkillUploadSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	srv := startUploadServer(t, "")
	v1 := srv.upload(t, "application/x-tar", sayTar(t, "kept"), http.StatusCreated)
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-srv.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not die")
	}
	again := startUploadServer(t, srv.store)
	status, res := again.run(t, "up-say@"+v1.Digest)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "kept\n", res.Stdout)
	require.Equal(t, v1.Digest, res.SkillDigest)
}

// The result cache on a real serve: a deterministic run is answered from
// the cache the second time; a change to the arguments, the skill (a new
// upload) or the token is a miss; the metrics count both.
func TestResultCacheOnServe(t *testing.T) {
	t.Parallel()
	srv := startUploadServer(t, "", "cache:\n  ttl: 10m\n")
	v1 := srv.upload(t, "application/x-tar", sayTar(t, "cached"), http.StatusCreated)
	run := func(u *uploadServer, ref, args string) sandbox.Result {
		t.Helper()
		status, b := u.do(t, "POST", "/v1/skills/"+ref+"/run", "application/json", []byte(`{"script": "scripts/say.py", "args": `+args+`}`))
		require.Equal(t, http.StatusOK, status, string(b))
		var res sandbox.Result
		require.NoError(t, json.Unmarshal(b, &res))
		return res
	}
	first := run(srv, "up-say", `{"a": 1}`)
	require.Equal(t, "miss", first.Cache)
	start := time.Now()
	hit := run(srv, "up-say", `{"a": 1}`)
	hitTook := time.Since(start)
	require.Equal(t, "hit", hit.Cache)
	require.Equal(t, first.ID, hit.ID)
	require.Equal(t, "cached\n", hit.Stdout)
	t.Logf("a run took %d ms, its cache hit %v", first.DurationMS, hitTook)

	require.Equal(t, "miss", run(srv, "up-say", `{"a": 2}`).Cache, "other arguments")
	srv.upload(t, "application/x-tar", sayTar(t, "fresh"), http.StatusCreated)
	res := run(srv, "up-say", `{"a": 1}`)
	require.Equal(t, "miss", res.Cache, "a new version of the skill")
	require.Equal(t, "fresh\n", res.Stdout)
	require.Equal(t, "hit", run(srv, "up-say@"+v1.Digest, `{"a": 1}`).Cache, "the pinned version's Result is still kept")
	// Another token (its own upload of the same bytes) never gets this token's Results.
	other := srv.as(upTokenB)
	other.upload(t, "application/x-tar", sayTar(t, "cached"), http.StatusCreated)
	require.Equal(t, "miss", run(other, "up-say", `{"a": 1}`).Cache)

	status, metrics := srv.do(t, "GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(metrics), `sandboxrun_cache_requests_total{result="hit"} 2`)
}
