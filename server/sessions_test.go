package server_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/server"
)

const (
	tokenA = "token-a-0123456789abcdef"
	tokenB = "token-b-0123456789abcdef"
)

// specEngine is engine that also remembers each run's workspace.
type specEngine struct {
	engine
	workspaces []string
}

func startSessions(t *testing.T) (string, *specEngine) {
	t.Helper()
	eng := &specEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{eng}, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, eng
}

func as(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

func newSession(t *testing.T, url, tok string) string {
	t.Helper()
	r := call(t, "POST", url+"/v1/sessions", `{"ttl": "10m"}`, as(tok)...)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	requireSchema(t, "Session", r.body)
	var info struct {
		ID         string `json:"id"`
		BytesLimit int64  `json:"bytes_limit"`
	}
	require.NoError(t, json.Unmarshal(r.body, &info))
	require.GreaterOrEqual(t, len(info.ID), 22, "at least 128 random bits")
	require.Positive(t, info.BytesLimit)
	return info.ID
}

func TestSessionFilesRoundTrip(t *testing.T) {
	url, eng := startSessions(t)
	id := newSession(t, url, tokenA)
	base := url + "/v1/sessions/" + id
	all := make([]byte, 0, 512)
	for i := range 512 {
		all = append(all, byte(i))
	}
	r := call(t, "PUT", base+"/files/in/every-byte.bin", string(all), as(tokenA)...)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	sum := sha256.Sum256(all)
	require.JSONEq(t, `{"path": "in/every-byte.bin", "size": 512, "sha256": "`+hex.EncodeToString(sum[:])+`"}`, string(r.body))
	requireSchema(t, "StoredFile", r.body)

	r = call(t, "GET", base+"/files/in/every-byte.bin", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, all, r.body)
	require.Equal(t, "application/octet-stream", r.header.Get("Content-Type"))
	require.Equal(t, `"`+hex.EncodeToString(sum[:])+`"`, r.header.Get("ETag"))

	r = call(t, "GET", base+"/files", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status)
	var list struct {
		Files []struct{ Path, Type, SHA256 string } `json:"files"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	requireSchema(t, "FileList", r.body)
	require.Len(t, list.Files, 2)
	require.Equal(t, "in", list.Files[0].Path)
	require.Equal(t, "dir", list.Files[0].Type)
	require.Equal(t, hex.EncodeToString(sum[:]), list.Files[1].SHA256)

	// A run in the session gets its folder as /workspace.
	r = call(t, "POST", url+"/v1/skills/hello/run", `{"script": "scripts/echo.py", "session": "`+id+`"}`, as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Len(t, eng.workspaces, 1)
	require.FileExists(t, filepath.Join(eng.workspaces[0], "in", "every-byte.bin"))

	// Tar out, then into a fresh session: the same files.
	r = call(t, "GET", base+"/files", "", append(as(tokenA), "Accept", "application/x-tar")...)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "application/x-tar", r.header.Get("Content-Type"))
	other := newSession(t, url, tokenA)
	r = call(t, "PUT", url+"/v1/sessions/"+other+"/files", string(r.body), append(as(tokenA), "Content-Type", "application/x-tar")...)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	requireSchema(t, "StoredFiles", r.body)
	r = call(t, "GET", url+"/v1/sessions/"+other+"/files/in/every-byte.bin", "", as(tokenA)...)
	require.Equal(t, all, r.body)

	r = call(t, "DELETE", base+"/files/in/every-byte.bin", "", as(tokenA)...)
	require.Equal(t, http.StatusNoContent, r.status)
	r = call(t, "GET", base+"/files/in/every-byte.bin", "", as(tokenA)...)
	require.Equal(t, http.StatusNotFound, r.status)
	r = call(t, "DELETE", base, "", as(tokenA)...)
	require.Equal(t, http.StatusNoContent, r.status)
	r = call(t, "GET", base, "", as(tokenA)...)
	require.Equal(t, http.StatusNotFound, r.status)
}

// TestSessionsAreTheirOwners: another token's session answers 404 to
// everything, exactly as one that does not exist.
func TestSessionsAreTheirOwners(t *testing.T) {
	url, eng := startSessions(t)
	id := newSession(t, url, tokenA)
	base := url + "/v1/sessions/" + id
	require.Equal(t, http.StatusCreated, call(t, "PUT", base+"/files/secret.txt", "mine", as(tokenA)...).status)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "", ""}, {"DELETE", "", ""}, {"GET", "/files", ""}, {"GET", "/files/secret.txt", ""},
		{"PUT", "/files/x.txt", "theirs"}, {"DELETE", "/files/secret.txt", ""},
	} {
		theirs := call(t, c.method, base+c.path, c.body, as(tokenB)...)
		missing := call(t, c.method, url+"/v1/sessions/aaaaaaaaaaaaaaaaaaaaaaaaaa"+c.path, c.body, as(tokenB)...)
		require.Equal(t, http.StatusNotFound, theirs.status, c.method+" "+c.path)
		require.Equal(t, missing.status, theirs.status)
	}
	r := call(t, "POST", url+"/v1/skills/hello/run", `{"script": "scripts/echo.py", "session": "`+id+`"}`, as(tokenB)...)
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
	require.Empty(t, eng.workspaces)
	r = call(t, "GET", url+"/v1/sessions", "", as(tokenB)...)
	require.JSONEq(t, `{"sessions": [], "partial": false, "unreachable": []}`, string(r.body))
	r = call(t, "GET", url+"/v1/sessions", "", as(tokenA)...)
	requireSchema(t, "SessionList", r.body)
	r = call(t, "GET", base, "", as(tokenB)...)
	requireSchema(t, "Error", r.body)
	r = call(t, "GET", base+"/files/secret.txt", "", as(tokenA)...)
	require.Equal(t, "mine", string(r.body), "untouched by the other token")
}

func TestSessionPathsRefused(t *testing.T) {
	url, _ := startSessions(t)
	id := newSession(t, url, tokenA)
	base := url + "/v1/sessions/" + id + "/files/"
	for _, p := range []string{
		"../x", "a/../../x", "%2e%2e/x", "..%2fx", "a%2Fb", "a%5cb", "a%00b", "a\\b", "/abs", "a//b", "./a", "a/.", "%252e%252e/x",
	} {
		for _, method := range []string{"GET", "PUT", "DELETE"} {
			r := call(t, method, base+p, "x", as(tokenA)...)
			require.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", method, p, r.body)
			require.Contains(t, string(r.body), "bad path", "%s %s", method, p)
		}
	}
}

func TestSessionLimitsAndErrors(t *testing.T) {
	url, _ := startSessions(t)
	r := call(t, "POST", url+"/v1/sessions", `{"ttl": "1000h"}`, as(tokenA)...)
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	require.Contains(t, string(r.body), "sessions.max_ttl")
	r = call(t, "POST", url+"/v1/sessions", `{"ttl": "1m", "quota": 1}`, as(tokenA)...)
	require.Equal(t, http.StatusBadRequest, r.status)
	r = call(t, "POST", url+"/v1/sessions", ``, as(tokenA)...)
	require.Equal(t, http.StatusCreated, r.status, "the body is optional")

	id := newSession(t, url, tokenA)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}))
	require.NoError(t, tw.Close())
	r = call(t, "PUT", url+"/v1/sessions/"+id+"/files", buf.String(), append(as(tokenA), "Content-Type", "application/x-tar")...)
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	r = call(t, "PUT", url+"/v1/sessions/"+id+"/files", "not json", as(tokenA)...)
	require.Equal(t, http.StatusUnsupportedMediaType, r.status)
	require.Equal(t, http.StatusCreated, call(t, "PUT", url+"/v1/sessions/"+id+"/files/d/f", "x", as(tokenA)...).status)
	r = call(t, "GET", url+"/v1/sessions/"+id+"/files/d", "", as(tokenA)...)
	require.Equal(t, http.StatusConflict, r.status, string(r.body))
}

func TestNoSessionsConfigured(t *testing.T) {
	f := start(t, nil, server.Options{})
	r := call(t, "POST", f.url+"/v1/sessions", ``)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, string(r.body), "--sessions DIR")
}

// recorder passes runs to a specEngine, noting each run's workspace.
type recorder struct{ e *specEngine }

func (r *recorder) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	r.e.mu.Lock()
	r.e.workspaces = append(r.e.workspaces, spec.Workspace)
	r.e.mu.Unlock()
	return r.e.Run(ctx, spec)
}
func (r *recorder) CheckImage(ctx context.Context, ref string) (string, error) {
	return r.e.CheckImage(ctx, ref)
}
func (r *recorder) Ping(ctx context.Context) error { return nil }
func (r *recorder) Close() error                   { return nil }
