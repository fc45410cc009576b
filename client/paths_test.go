package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeAPI is a server whose router cleans paths as Go's ServeMux does (and
// so redirects ".../snapshots/.." to the session), recording what it did.
type fakeAPI struct {
	mu   sync.Mutex
	seen []string
}

func (f *fakeAPI) start(t *testing.T) string {
	mux := http.NewServeMux()
	record := func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		if r.Method != http.MethodDelete {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"S"}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	mux.HandleFunc("GET /v1/sessions/{id}", record)
	mux.HandleFunc("DELETE /v1/sessions/{id}", record)
	mux.HandleFunc("DELETE /v1/sessions/{id}/snapshots/{snap}", record)
	mux.HandleFunc("DELETE /v1/skills/{name}", record)
	mux.HandleFunc("DELETE /v1/skills/{name}/versions/{version}", record)
	mux.HandleFunc("PUT /v1/sessions/{id}/files/{path...}", record)
	mux.HandleFunc("/moved/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.TrimPrefix(r.URL.Path, "/moved"), http.StatusTemporaryRedirect)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL
}

func (f *fakeAPI) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// TestUncleanParamsAreRefused: an id, a name or a file path a router would
// clean into another resource is refused before anything is sent.
func TestUncleanParamsAreRefused(t *testing.T) {
	f := &fakeAPI{}
	c, err := New(f.start(t))
	require.NoError(t, err)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"snapshot ..":       func() error { return c.DeleteSnapshot(ctx, "S", "..") },
		"snapshot .":        func() error { return c.DeleteSnapshot(ctx, "S", ".") },
		"snapshot empty":    func() error { return c.DeleteSnapshot(ctx, "S", "") },
		"snapshot slash":    func() error { return c.DeleteSnapshot(ctx, "S", "x/..") },
		"session ..":        func() error { return c.DeleteSession(ctx, "..") },
		"session backslash": func() error { return c.DeleteSession(ctx, `a\b`) },
		"version ..":        func() error { return c.DeleteSkillVersion(ctx, "greeter", "..") },
		"skill ..":          func() error { return c.DeleteSkill(ctx, "..") },
		"skill slash":       func() error { _, err := c.Activate(ctx, "a/b"); return err },
		"run ..":            func() error { _, err := c.Run(ctx, "..", RunRequest{Script: "x"}); return err },
		"file ..":           func() error { _, err := c.PutFile(ctx, "S", "a/../../x", strings.NewReader("x")); return err },
		"file trailing":     func() error { _, err := c.PutFile(ctx, "S", "a/", strings.NewReader("x")); return err },
		"file absolute":     func() error { return c.DeleteFile(ctx, "S", "/etc/passwd") },
		"file .":            func() error { _, err := c.GetFile(ctx, "S", "./a"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, ErrBadParam)
			require.ErrorIs(t, err, ErrBadRequest, "as the server's 400 would")
			var pe *ParamError
			require.ErrorAs(t, err, &pe)
			require.NotEmpty(t, pe.Param)
			require.Contains(t, err.Error(), pe.Reason)
		})
	}
	require.Empty(t, f.requests(), "nothing was sent")

	require.NoError(t, c.DeleteSnapshot(ctx, "S", "1.2"), "a dot inside a name is fine")
	_, err = c.PutFile(ctx, "S", "out/.hidden/a..b", strings.NewReader("x"))
	require.NoError(t, err)
	require.Equal(t, []string{"DELETE /v1/sessions/S/snapshots/1.2", "PUT /v1/sessions/S/files/out/.hidden/a..b"}, f.requests())
}

// TestNoRedirectFollowedButForReads: a redirect of a DELETE (or any call
// but GET and HEAD) is an *Error matching ErrRedirect, never followed,
// with the default HTTP client and with one the caller gives; a GET's is
// followed.
func TestNoRedirectFollowedButForReads(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string][]Option{
		"default":        nil,
		"caller's":       {WithHTTPClient(&http.Client{})},
		"caller's check": {WithHTTPClient(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }})},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{}
			url := f.start(t)
			c, err := New(url, opts...)
			require.NoError(t, err)
			c.base = url + "/moved" // every call is answered 307 to its /v1/sessions/... twin

			err = c.DeleteSession(ctx, "S")
			require.ErrorIs(t, err, ErrRedirect)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, http.StatusTemporaryRedirect, e.Status)
			require.Contains(t, e.Message, "/v1/sessions/S")
			require.Empty(t, f.requests(), "the DELETE was not followed")

			s, err := c.Session(ctx, "S")
			require.NoError(t, err, "a GET follows")
			require.Equal(t, "S", s.ID)
			require.Equal(t, []string{"GET /v1/sessions/S"}, f.requests())
		})
	}
	hc := &http.Client{}
	_, err := New("http://127.0.0.1:1", WithHTTPClient(hc))
	require.NoError(t, err)
	require.Nil(t, hc.CheckRedirect, "the caller's client is not changed")
}

// TestServeMuxRedirectDeletesNothing: against a router that redirects a
// cleaned path, DeleteSnapshot(S, "..") deletes no session.
func TestServeMuxRedirectDeletesNothing(t *testing.T) {
	f := &fakeAPI{}
	c, err := New(f.start(t))
	require.NoError(t, err)
	require.Error(t, c.DeleteSnapshot(context.Background(), "S", ".."))
	require.Error(t, c.DeleteSkillVersion(context.Background(), "greeter", ".."))
	require.Empty(t, f.requests(), "no session or skill was deleted through a redirect")
}
