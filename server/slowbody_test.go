package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/server"
)

// A JSON body has BodyTimeout to arrive, counted from when the server
// starts reading it: a client that stops, and one that trickles, gets 408
// and its connection closed, nothing run; the deadline is lifted once the
// body is in, so a run that lasts longer than it is answered in full, and
// other clients are served meanwhile.
func TestSlowBodyIs408(t *testing.T) {
	const bound = 300 * time.Millisecond
	eng := &engine{}
	fx := start(t, eng, server.Options{BodyTimeout: bound})
	addr := strings.TrimPrefix(fx.url, "http://")
	head := "POST /v1/skills/hello/python HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n"

	for name, send := range map[string]func(c net.Conn){
		"stops": func(c net.Conn) { _, _ = io.WriteString(c, `{"code": "pri`) },
		"trickles": func(c net.Conn) {
			for range 40 { // 2 s of one byte each 50 ms, past the bound but never silent for it
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second))) // it did not hang
			_, err = io.WriteString(c, head)
			require.NoError(t, err)
			go send(c)
			began := time.Now()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
			require.Contains(t, string(body), "did not arrive within 300ms")
			require.True(t, resp.Close, "the connection is closed")
			require.GreaterOrEqual(t, time.Since(began), bound)
		})
	}
	eng.mu.Lock()
	require.Zero(t, eng.runs, "nothing ran")
	eng.mu.Unlock()

	// A run that outlasts the bound, its body sent at once, streamed and
	// not: the deadline on the body is not one on the answer.
	eng.block = make(chan struct{})
	go func() { time.Sleep(4 * bound); close(eng.block) }()
	for _, accept := range []string{"application/x-ndjson", "application/json"} {
		r := call(t, "POST", fx.url+"/v1/skills/hello/python", `{"code": "print(1)"}`, "Accept", accept)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.Regexp(t, `"success": ?true`, string(r.body))
	}
}

// deadlineBody is a body whose connection's read deadline passed after
// some bytes, as a stalled upload's does.
type deadlineBody struct{ sent bool }

func (b *deadlineBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "partial"), nil
	}
	return 0, os.ErrDeadlineExceeded
}

func (b *deadlineBody) Close() error { return nil }

// An upload cut off for sending nothing is 408, as a slow JSON body is,
// for one file and for a tar; nothing of it is kept.
func TestStalledUploadIs408(t *testing.T) {
	h, id := sessionHandler(t)
	for _, tc := range []struct{ path, contentType string }{
		{"/files/a.txt", "application/octet-stream"}, {"/files", "application/x-tar"},
	} {
		req := httptest.NewRequest("PUT", "/v1/sessions/"+id+tc.path, &deadlineBody{})
		req.Header.Set("Content-Type", tc.contentType)
		req.Header.Set("Authorization", "Bearer "+tokenA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusRequestTimeout, rec.Code, "%s: %s", tc.path, rec.Body)
		require.Contains(t, rec.Body.String(), "nothing of the upload arrived for 30s")
	}
	req := httptest.NewRequest("GET", "/v1/sessions/"+id+"/files", nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.NotContains(t, rec.Body.String(), "a.txt")
}

// sessionHandler is the router over a real session store, with one
// session of tokenA's.
func sessionHandler(t *testing.T) (http.Handler, string) {
	t.Helper()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{&specEngine{}}, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA)})
	require.NoError(t, err)
	req := httptest.NewRequest("POST", "/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var info struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &info))
	return srv.Handler(), info.ID
}

// An upload to another replica's session that stalls is cut off by the
// replica it reached, with the 408 the owner would answer, not a 502.
func TestStalledForwardedUploadIs408(t *testing.T) {
	p := startPair(t)
	id := newSession(t, p.url[0], tokenA)
	req := httptest.NewRequest("PUT", "/v1/sessions/"+id+"/files/a.txt", &deadlineBody{})
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer "+tokenA)
	rec := httptest.NewRecorder()
	p.ts[1].Config.Handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestTimeout, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "nothing of the upload arrived")
}
