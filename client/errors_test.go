package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestErrorMapping answers every error status the spec names and checks
// the sentinel, the message and the extra fields the client hands back.
func TestErrorMapping(t *testing.T) {
	cases := []struct {
		status   int
		body     string
		header   map[string]string
		sentinel error
		check    func(t *testing.T, e *Error)
	}{
		{400, `{"error":"bad request: \"script\" is required"}`, nil, ErrBadRequest, nil},
		{401, `{"error":"missing or unknown bearer token"}`, nil, ErrUnauthorized, nil},
		{403, `{"error":"denied","part":"rm -rf /","reason":"not allowed","suggest":"Bash(rm:*)"}`, nil, ErrRefused,
			func(t *testing.T, e *Error) {
				require.Equal(t, "rm -rf /", e.Part)
				require.Equal(t, "not allowed", e.Reason)
				require.Equal(t, "Bash(rm:*)", e.Suggest)
			}},
		{404, `{"error":"skill \"nope\" not found"}`, nil, ErrNotFound, nil},
		{408, `{"error":"the body did not arrive in time"}`, nil, ErrRequestTimeout, nil},
		{409, `{"error":"a folder is in the way"}`, nil, ErrConflict, nil},
		{413, `{"error":"over sessions.quota"}`, nil, ErrTooLarge, nil},
		{415, `{"error":"not a tar"}`, nil, ErrUnsupportedMedia, nil},
		{429, `{"error":"server busy"}`, map[string]string{"Retry-After": "7"}, ErrBusy,
			func(t *testing.T, e *Error) { require.Equal(t, 7*time.Second, e.RetryAfter) }},
		{500, `{"error":"the sandbox failed mid-run","result":{"id":"r1","exit_code":-1,"stdout":"partial"}}`, nil, ErrServer,
			func(t *testing.T, e *Error) {
				require.NotNil(t, e.Result)
				require.Equal(t, "partial", e.Result.Stdout)
			}},
		{503, `{"error":"the engine is unreachable"}`, map[string]string{"Retry-After": "5"}, ErrUnavailable,
			func(t *testing.T, e *Error) {
				require.ErrorIs(t, e, ErrServer)
				require.Equal(t, 5*time.Second, e.RetryAfter)
			}},
		{507, `{"error":"the server's disk is full"}`, nil, ErrDiskFull,
			func(t *testing.T, e *Error) { require.ErrorIs(t, e, ErrServer) }},
		{502, `bad gateway from a proxy`, nil, ErrServer,
			func(t *testing.T, e *Error) { require.Equal(t, "bad gateway from a proxy", e.Message) }},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			c, err := New(srv.URL, WithToken(""))
			require.NoError(t, err)
			_, err = c.Run(context.Background(), "hello", RunRequest{Script: "scripts/echo.py"})
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.status, e.Status)
			require.ErrorIs(t, err, tc.sentinel)
			for _, other := range []error{ErrBadRequest, ErrUnauthorized, ErrRefused, ErrNotFound, ErrBusy} {
				if !errors.Is(other, tc.sentinel) {
					require.NotErrorIs(t, err, other)
				}
			}
			require.NotEmpty(t, e.Message)
			require.Contains(t, err.Error(), e.Message)
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

// TestStreamErrorEvent: an error after the stream began arrives as the
// last event and ends the sequence as an *Error.
func TestStreamErrorEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "application/x-ndjson", r.Header.Get("Accept"))
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"type":"stdout","data":"a"}`+"\n"+`{"type":"error","error":{"error":"engine died","result":{"id":"x"}}}`+"\n")
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	require.NoError(t, err)
	var got []string
	var last error
	for ev, err := range c.RunStream(context.Background(), "hello", RunRequest{Script: "scripts/echo.py"}) {
		got = append(got, ev.Type)
		last = err
	}
	require.Equal(t, []string{"stdout", "error"}, got)
	require.ErrorIs(t, last, ErrServer)
	var e *Error
	require.ErrorAs(t, last, &e)
	require.Equal(t, "engine died", e.Message)
	require.Equal(t, "x", e.Result.ID)
}

// TestStreamRefused: a stream refused before it began yields the same
// *Error as the plain call, and nothing else.
func TestStreamRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error":"denied","part":"rm x"}`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	require.NoError(t, err)
	n := 0
	for _, err := range c.ExecStream(context.Background(), "hello", ExecRequest{Command: "rm x"}) {
		n++
		require.ErrorIs(t, err, ErrRefused)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, "rm x", e.Part)
	}
	require.Equal(t, 1, n)
}

// TestStreamCut: a stream that ends without its result is an error, not a
// silent success.
func TestStreamCut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"type":"stdout","data":"a"}`+"\n")
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	require.NoError(t, err)
	var last error
	for _, err := range c.RunStream(context.Background(), "hello", RunRequest{Script: "scripts/echo.py"}) {
		last = err
	}
	require.ErrorIs(t, last, errNoResult)
}

// TestUnixSocketAndToken: unix:/path dials the socket, and the token goes
// in the Authorization header; the environment supplies both when the
// caller gives neither.
func TestUnixSocketAndToken(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	var gotAuth, gotPath string
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.EscapedPath()
		_, _ = io.WriteString(w, `{"path":"out/a b.txt","size":1,"sha256":"`+strings.Repeat("0", 64)+`"}`)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("SANDBOXRUN_URL", "unix:"+sock)
	t.Setenv("SANDBOXRUN_TOKEN", "tok-from-env-0123456789")
	c, err := New("")
	require.NoError(t, err)
	f, err := c.PutFile(context.Background(), "abc", "out/a b.txt", strings.NewReader("x"))
	require.NoError(t, err)
	require.Equal(t, int64(1), f.Size)
	require.Equal(t, "Bearer tok-from-env-0123456789", gotAuth)
	require.Equal(t, "/v1/sessions/abc/files/out/a%20b.txt", gotPath)
}

func TestNewRefusesBadURLs(t *testing.T) {
	t.Setenv("SANDBOXRUN_URL", "")
	for _, u := range []string{"", "ftp://x", "127.0.0.1:8080", "unix:", "http://h:1/v1"} {
		_, err := New(u)
		require.Error(t, err, u)
		require.Contains(t, err.Error(), "sandboxrun client")
	}
	// Nothing listens on port 1: a transport error, not an *Error.
	c, err := New("http://127.0.0.1:1")
	require.NoError(t, err)
	_, err = c.Healthz(context.Background())
	require.Error(t, err)
	var e *Error
	require.False(t, errors.As(err, &e))
}
