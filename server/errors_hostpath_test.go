package server_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// TestErrorAnswersNameNoHostPath walks the error paths of every kind of
// route, sessions, files, snapshots, restores, forks and uploads among
// them: whatever went wrong, the caller's answer names none of the
// server's folders. The answers come from the Service's Door for a remote
// caller; no route composes its own.
func TestErrorAnswersNameNoHostPath(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "uploads")
	sessions := filepath.Join(dir, "sessions")
	polPath := filepath.Join(dir, "operator-policy.yaml")
	require.NoError(t, os.WriteFile(polPath, []byte("skill_uploads:\n  allow: tokens\n  store: "+store+"\nsessions:\n  max_files: 3\n  quota: 64KiB\n"), 0o600))
	pol, err := policy.LoadPolicy(polPath)
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{&specEngine{}},
		SessionsRoot: sessions, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	skills, err := filepath.Abs("../skills")
	require.NoError(t, err)
	host := []string{dir, store, sessions, skills, polPath}

	id := newSession(t, ts.URL, tokenA)
	s := ts.URL + "/v1/sessions/" + id
	require.Equal(t, http.StatusCreated, call(t, "PUT", s+"/files/a", "x", as(tokenA)...).status)
	tarOf := func(files map[string]string) string { return linkTar(t, files) }
	tests := []struct {
		name, method, url, body string
		header                  []string
	}{
		{"a file under a file", "PUT", s + "/files/a/b", "x", nil},
		{"a file past the file count", "PUT", s + "/files/c/d/e/f", "x", nil},
		{"a file past the quota", "PUT", s + "/files/big", string(make([]byte, 128<<10)), nil},
		{"a missing file", "GET", s + "/files/nope", "", nil},
		{"deleting a missing file", "DELETE", s + "/files/nope", "", nil},
		{"listing a missing folder", "GET", s + "/files?path=nope", "", nil},
		{"a tar with a link out", "PUT", s + "/files", tarOf(map[string]string{"l": "->/etc/passwd", "l/x": "y"}), []string{"Content-Type", "application/x-tar"}},
		{"a tar that is not one", "PUT", s + "/files", "not a tar at all, not at all", []string{"Content-Type", "application/x-tar"}},
		{"another owner's session", "GET", ts.URL + "/v1/sessions/" + id, "", as(tokenB)},
		{"a missing session", "DELETE", ts.URL + "/v1/sessions/nosuchsession0123456789", "", nil},
		{"a missing snapshot restored", "POST", s + "/restore", `{"snapshot": "nosnap"}`, nil},
		{"a missing snapshot deleted", "DELETE", s + "/snapshots/nosnap", "", nil},
		{"a fork of a missing session", "POST", ts.URL + "/v1/sessions", `{"from": {"session": "nosuchsession0123456789"}}`, nil},
		{"a fork of a missing snapshot", "POST", ts.URL + "/v1/sessions", `{"from": {"session": "` + id + `", "snapshot": "nosnap"}}`, nil},
		{"an upload that is no archive", "POST", ts.URL + "/v1/skills", "garbage", []string{"Content-Type", "application/x-tar"}},
		{"an upload linking out", "POST", ts.URL + "/v1/skills", tarOf(map[string]string{"SKILL.md": "->/etc/passwd"}), []string{"Content-Type", "application/x-tar"}},
		{"versions of a missing upload", "GET", ts.URL + "/v1/skills/nope/versions", "", nil},
		{"deleting a missing upload", "DELETE", ts.URL + "/v1/skills/nope", "", nil},
		{"deleting a missing version", "DELETE", ts.URL + "/v1/skills/nope/versions/1", "", nil},
		{"a missing skill run", "POST", ts.URL + "/v1/skills/nope/run", `{"script": "scripts/x.py"}`, nil},
		{"a run in a missing session", "POST", ts.URL + "/v1/skills/hello/exec", `{"command": "echo", "session": "nosuchsession0123456789"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := tt.header
			if len(header) < 2 || header[0] != "Authorization" {
				header = append(as(tokenA), header...)
			}
			r := call(t, tt.method, tt.url, tt.body, header...)
			require.GreaterOrEqual(t, r.status, 400, "an error path: %s", r.body)
			requireNoHostPath(t, r.body, host)
		})
	}
}

// TestSessionsOffNameNoHostPath: a server whose sessions are refused for a
// reason naming the sessions root (read-only sessions on Kubernetes with
// no claim holding it) tells every session route's caller the reason,
// never the root.
func TestSessionsOffNameNoHostPath(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	pol, err := policy.ParsePolicy("p.yaml", []byte("backend: kubernetes\nkubernetes:\n  namespace: sbx\n  host_paths: false\nsessions:\n  write: false\n"))
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{&specEngine{}},
		SessionsRoot: sessions, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for _, route := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions", ""},
		{"GET", "/v1/sessions", ""},
		{"GET", "/v1/sessions/s0123456789abcdefghijkl/files", ""},
		{"POST", "/v1/sessions/s0123456789abcdefghijkl/snapshots", ""},
		{"POST", "/v1/sessions/s0123456789abcdefghijkl/restore", `{"snapshot": "x"}`},
		{"POST", "/v1/skills/hello/exec", `{"command": "echo", "session": "s0123456789abcdefghijkl"}`},
	} {
		r := call(t, route.method, ts.URL+route.path, route.body, as(tokenA)...)
		require.Equal(t, http.StatusForbidden, r.status, "%s %s: %s", route.method, route.path, r.body)
		require.Contains(t, string(r.body), "read-only", route.path)
		requireNoHostPath(t, r.body, []string{dir, sessions})
	}
}
