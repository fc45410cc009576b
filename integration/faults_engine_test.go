//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// engineProxy forwards a unix socket to the engine's, and the test can cut
// it (the socket goes away and every connection through it is closed) and
// restore it: the engine as a server sees it go away and come back, while
// the machine's engine itself is never touched.
type engineProxy struct {
	path   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

func newEngineProxy(t *testing.T) *engineProxy {
	t.Helper()
	target := strings.TrimPrefix(os.Getenv("DOCKER_HOST"), "unix://")
	if target == "" {
		target = "/var/run/docker.sock"
	}
	// A short folder: a unix socket path is bounded (108 bytes).
	dir, err := os.MkdirTemp("", "engine-proxy-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := &engineProxy{path: filepath.Join(dir, "docker.sock"), target: target, conns: map[net.Conn]struct{}{}}
	p.up(t)
	t.Cleanup(p.cut)
	return p
}

// host is the DOCKER_HOST a process uses to reach the engine through p.
func (p *engineProxy) host() string { return "DOCKER_HOST=unix://" + p.path }

// up starts (or restarts) forwarding.
func (p *engineProxy) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("unix", p.path)
	require.NoError(t, err)
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *engineProxy) forward(c net.Conn) {
	e, err := net.Dial("unix", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		_ = c.Close()
		_ = e.Close()
		return
	}
	p.conns[c], p.conns[e] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if uc, ok := dst.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(e, c)
	go pipe(c, e)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, e)
	p.mu.Unlock()
	_ = c.Close()
	_ = e.Close()
}

// cut makes the engine unreachable: no new connection, and every open one
// (a run's attached stream included) ends.
func (p *engineProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close() // removes the socket file
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// errorReply is an error answer's body.
type errorReply struct {
	Error  string          `json:"error"`
	Result *sandbox.Result `json:"result"`
}

// requireEngineDown checks a run is refused as the engine being away.
func requireEngineDown(t *testing.T, resp reply, body []byte) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(body))
	require.NotEmpty(t, resp.Header.Get("Retry-After"), "a 503 says when to retry")
	var e errorReply
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	require.Contains(t, e.Error, "engine", "the message names the engine")
	require.NotContains(t, e.Error, "docker.sock", "the host's socket path stays on the host")
	require.NotContains(t, e.Error, "engine-proxy-")
}

// TestFaultsEngineGoesAway: with the engine unreachable a run is a 503
// with Retry-After naming the engine, /readyz says not ready; a run cut
// mid-way ends with a clear answer; once the engine is back, runs work
// without a restart and nothing of the cut run is left.
func TestFaultsEngineGoesAway(t *testing.T) {
	t.Parallel()
	const name = "fault-engine"
	proxy := newEngineProxy(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	srv := startServerEnv(t, []string{proxy.host()}, addr, serverSkill(t, name), "--warm-pool", "0")
	resp, body := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	// Between runs.
	proxy.cut()
	for _, path := range []string{"/run", "/python"} {
		b := `{"script": "scripts/echo.py"}`
		if path == "/python" {
			b = `{"code": "print(1)"}`
		}
		resp, body = srv.post(t, "/v1/skills/"+name+path, b)
		requireEngineDown(t, resp, body)
	}
	ready, err := http.Get(srv.url + "/readyz")
	require.NoError(t, err)
	ready.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, ready.StatusCode)
	proxy.up(t)
	require.Eventually(t, func() bool {
		r, err := http.Get(srv.url + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "ready again once the engine is back")
	resp, body = srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	// Mid-run, answered in one document and as a stream.
	for _, stream := range []bool{false, true} {
		type answer struct {
			status int
			header http.Header
			body   []byte
		}
		got := make(chan answer, 1)
		begun := make(chan struct{})
		go func() {
			req, _ := http.NewRequest("POST", srv.url+"/v1/skills/"+name+"/run", strings.NewReader(`{"script": "scripts/wait.py"}`))
			if stream {
				req.Header.Set("Accept", "application/x-ndjson")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				close(begun)
				got <- answer{status: -1, body: []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			var first string
			if stream {
				first, _ = br.ReadString('\n')
			}
			close(begun)
			b, _ := io.ReadAll(br)
			got <- answer{resp.StatusCode, resp.Header, append([]byte(first), b...)}
		}()
		if stream {
			// The script's first line came: the run is under way.
			select {
			case <-begun:
			case <-time.After(2 * time.Minute):
				t.Fatalf("the streamed run did not start; stderr: %s", srv.stderr)
			}
		} else {
			// Running, as far as the engine says; the run may still be
			// starting, which is a cut before the run too.
			require.Eventually(t, func() bool {
				list, err := sandboxesOf(name)
				return err == nil && len(list) > 0 && list[0].State == "running"
			}, 2*time.Minute, 50*time.Millisecond)
			time.Sleep(time.Second)
		}
		proxy.cut()
		var a answer
		select {
		case a = <-got:
		case <-time.After(2 * time.Minute):
			t.Fatalf("a run cut mid-way did not end; stderr: %s", srv.stderr)
		}
		t.Logf("cut mid-run (stream %v): %d %s", stream, a.status, a.body)
		if stream {
			require.Equal(t, http.StatusOK, a.status, "the stream had begun")
			lines := strings.Split(strings.TrimSpace(string(a.body)), "\n")
			var last struct {
				Type  string      `json:"type"`
				Error *errorReply `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
			require.Equal(t, "error", last.Type, string(a.body))
			require.Contains(t, last.Error.Error, "engine")
			require.NotNil(t, last.Error.Result, "a clear Result")
			require.False(t, last.Error.Result.Success)
		} else {
			requireEngineDown(t, reply{StatusCode: a.status, Header: a.header}, a.body)
			var e errorReply
			require.NoError(t, json.Unmarshal(a.body, &e))
			if e.Result != nil { // the run had begun
				require.False(t, e.Result.Success)
				require.Contains(t, e.Result.Error, "engine")
			}
		}
		proxy.up(t)
		// The engine is back: the cut run's sandbox goes, by the server's
		// own retry, without another run asking.
		require.Eventually(t, func() bool { return len(skillContainers(t, name)) == 0 },
			2*time.Minute, 200*time.Millisecond, "the cut run's sandbox is removed once the engine is back")
		resp, body = srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	}
	require.False(t, errors.Is(context.Background().Err(), context.Canceled))
}
