//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The fault tests: what a serve does when its clients are slow, broken or
// hostile. Bounds on time here say "it did not hang", with room for a
// loaded machine; speed is the bench's business.

// rssKiB is the resident set of process pid, from /proc.
func rssKiB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestFaultsSlowHeaders: hundreds of connections that send their headers
// a byte at a time hold the server no longer than its header timeout, and
// a normal client is served meanwhile.
func TestFaultsSlowHeaders(t *testing.T) {
	t.Parallel()
	const name = "fault-slow"
	srv := startServer(t, serverSkill(t, name), "--warm-pool", "0")
	addr := strings.TrimPrefix(srv.url, "http://")
	const n = 300
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = io.WriteString(c, "POST /v1/skills/"+name+"/run HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
		conns = append(conns, c)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var trickling sync.WaitGroup
	for _, c := range conns {
		trickling.Add(1)
		go func() {
			defer trickling.Done()
			for ctx.Err() == nil {
				if _, err := c.Write([]byte("X")); err != nil {
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
	}
	// A normal client, meanwhile: a run, start to end.
	resp, body := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py", "args": {"n": 1}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	// Every slow connection is closed by the server (a 408, or just the
	// end of the stream) once its header time is up.
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
			_, err := io.Copy(io.Discard, c)
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				closed.Add(1)
			}
		}()
	}
	wg.Wait()
	stop()
	trickling.Wait()
	require.EqualValues(t, n, closed.Load(), "every slow-header connection is closed by the server")
}

// TestFaultsOversizedRequests: headers past the bound are 431, bodies past
// their bound 413, and the server goes on.
func TestFaultsOversizedRequests(t *testing.T) {
	t.Parallel()
	srv := startSessionServer(t, "")
	c := srv.do(t, "GET", "/v1/sessions", nil, "X-Pad", strings.Repeat("a", 1<<20))
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, c.status, c.String())
	c = srv.do(t, "POST", "/v1/skills/"+srv.skill+"/python", strings.NewReader(`{"code": "`+strings.Repeat("x", 40<<20)+`"}`))
	require.Equal(t, http.StatusRequestEntityTooLarge, c.status, c.String())
	c = srv.do(t, "POST", "/v1/sessions", strings.NewReader(`{"ttl": "`+strings.Repeat("9", 1<<20)+`"}`))
	require.Equal(t, http.StatusRequestEntityTooLarge, c.status, c.String())
	s := srv.create(t, "")
	res := srv.python(t, s.ID, "print('ok')")
	require.True(t, res.Success, res.Stderr)
}

// malformed are bodies no run endpoint may take: each must be a 4xx.
func malformed() []string {
	deep := strings.Repeat(`{"a":`, 12000) + "1" + strings.Repeat("}", 12000)
	return []string{
		``, `{`, `}`, `null`, `[]`, `"code"`, `42`, `{"code": }`, `{"code": "1",}`, `{code: "1"}`,
		`{"code": 1}`, `{"code": ["1"]}`, `{"code": {"a": 1}}`, `{"code": null, "script": 3}`,
		`{"code": "1", "timeout": "forever"}`, `{"code": "1", "timeout": -1}`, `{"code": "1", "timeout": 1e308}`,
		`{"code": "1", "memory_mib": 1e400}`, `{"code": "1", "memory_mib": 99999999999999999999999}`,
		`{"code": "1", "memory_mib": -5}`, `{"code": "1", "cpus": "two"}`, `{"code": "1", "env": ["A=1"]}`,
		`{"code": "1", "env": {"A": 1}}`, `{"code": "1", "argv": "x"}`, `{"code": "1", "argv": [1]}`,
		"{\"code\": \"print('\xff\xfe')\"}", "{\"code\": \"1\", \"env\": {\"A\": \"\xc0\x80\"}}",
		"{\"code\": \"1\", \"argv\": [\"\xed\xa0\x80\"]}", `{"code": "\ud800"}`, `{"code": "\udfff x"}`,
		`{"Code": "print(1)"}`, `{"CODE": "print(1)"}`, `{"code": "1", "Session": "x"}`, `{"code": "1"} {}`,
		`{"code": "1"}]`, `{"code": "1", "args": ` + deep + `}`, `{"code": "1", "args": ` + strings.Repeat("[", 20000) + `}`,
		`{"code": "1", "script": "scripts/echo.py"}`, `{"code": "1", "workspace": "w"}`, `{"code": "1", "unknown": true}`,
		`{"code": "1", "session": "../../etc"}`, `{"code": "1", "session": "` + strings.Repeat("s", 5000) + `"}`,
		`{"code": "1", "env": {"SKILL_NAME": "x"}}`, `{"code": "1", "env": {"": "x"}}`, `{"code": "1", "env": {"A=B": "x"}}`,
		`{"code": "1", "argv": ["a\u0000b"]}`, "\x00\x01\x02", strings.Repeat("{", 100000),
	}
}

// TestFaultsMalformedRequests: thousands of malformed requests are all
// answered 4xx, none 5xx, nothing reaches the engine, and the server's
// memory stays flat.
func TestFaultsMalformedRequests(t *testing.T) {
	t.Parallel()
	srv := startSessionServer(t, "")
	sess := srv.create(t, "")
	bodies := malformed()
	paths := []string{"/v1/skills/" + srv.skill + "/python", "/v1/skills/" + srv.skill + "/run",
		"/v1/skills/" + srv.skill + "/exec", "/v1/skills/" + srv.skill + "/explain", "/v1/sessions",
		"/v1/sessions/" + sess.ID + "/snapshots", "/v1/sessions/" + sess.ID + "/restore"}
	send := func(rounds int) map[int]int {
		var mu sync.Mutex
		statuses := map[int]int{}
		work := make(chan [2]string)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for w := range work {
					req, err := http.NewRequest("POST", srv.url+w[0], strings.NewReader(w[1]))
					if err != nil {
						panic(err)
					}
					resp, err := http.DefaultClient.Do(req)
					status := -1
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						status = resp.StatusCode
					}
					mu.Lock()
					statuses[status]++
					if status < 400 || status >= 500 {
						t.Errorf("POST %s %.80q: %d", w[0], w[1], status)
					}
					mu.Unlock()
				}
			}()
		}
		for range rounds {
			for _, p := range paths {
				for _, b := range bodies {
					if !strings.HasPrefix(p, "/v1/skills/") && (b == "" || b == "null") {
						continue // no body is a valid create or snapshot
					}
					work <- [2]string{p, b}
				}
			}
		}
		close(work)
		wg.Wait()
		return statuses
	}
	pid := srv.cmd.Process.Pid
	send(1) // warm up: buffers grow to their working size
	before := rssKiB(t, pid)
	statuses := send(8)
	after := rssKiB(t, pid)
	total := 0
	for _, n := range statuses {
		total += n
	}
	t.Logf("%d malformed requests: statuses %v; RSS %d KiB before, %d KiB after", total, statuses, before, after)
	require.GreaterOrEqual(t, total, 2000)
	require.Less(t, after-before, int64(64<<10), "RSS grew by %d KiB over %d requests", after-before, total)
	require.Empty(t, skillContainers(t, srv.skill), "nothing malformed reached the engine")
}

// TestFaultsAbandonedStream: a client that goes away in the middle of a
// streamed run cancels it, and its sandbox is removed.
func TestFaultsAbandonedStream(t *testing.T) {
	t.Parallel()
	const name = "fault-abandon"
	srv := startServer(t, serverSkill(t, name), "--warm-pool", "0")
	for _, media := range []string{"application/x-ndjson", "text/event-stream"} {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, "POST", srv.url+"/v1/skills/"+name+"/run", strings.NewReader(`{"script": "scripts/wait.py"}`))
		require.NoError(t, err)
		req.Header.Set("Accept", media)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			if strings.Contains(line, "started") {
				break
			}
		}
		require.NotEmpty(t, skillContainers(t, name), "the run is up")
		cancel()
		resp.Body.Close()
		require.Eventually(t, func() bool { return len(skillContainers(t, name)) == 0 },
			90*time.Second, 100*time.Millisecond, "the abandoned %s run's sandbox is removed", media)
	}
}

// TestFaultsMCPGarbage: lines that are not JSON-RPC, and one over the
// message bound, are answered with JSON-RPC errors on stdio, and the next
// valid call runs.
func TestFaultsMCPGarbage(t *testing.T) {
	t.Parallel()
	skills, err := filepath.Abs("../skills")
	require.NoError(t, err)
	cmd := exec.Command(sandboxrunBin(t), "mcp", "--skills", skills, "--warm-pool", "0")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	trackOwner(t, cmd.Process.Pid)
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	out := bufio.NewReaderSize(stdout, 1<<20)
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	next := func() answer {
		t.Helper()
		got := make(chan string, 1)
		go func() { l, _ := out.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			var a answer
			require.NoError(t, json.Unmarshal([]byte(l), &a), "an answer: %q; stderr: %s", l, &stderr)
			return a
		case <-time.After(2 * time.Minute):
			t.Fatalf("no answer; stderr: %s", &stderr)
			return answer{}
		}
	}
	send := func(line string) {
		t.Helper()
		_, err := io.WriteString(stdin, line+"\n")
		require.NoError(t, err, "stderr: %s", &stderr)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	require.Nil(t, next().Error)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	garbage := []struct {
		line string
		code int
	}{
		{"hello", -32700},
		{"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"", -32700},
		{"\xff\xfe\xfd", -32700},
		{`[1,2,3]`, -32600},
		{`{"id":3,"method":"tools/list"}`, -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, -32600},
		{`{"jsonrpc":"2.0","id":4,"method":"` + strings.Repeat("m", 30<<20) + `"}`, -32600},
	}
	for _, g := range garbage {
		send(g.line)
		a := next()
		require.NotNil(t, a.Error, "%.60q is answered with an error", g.line)
		require.Equal(t, g.code, a.Error.Code, "%.60q: %s", g.line, a.Error.Message)
	}
	// A valid message with arguments of the wrong kind is the protocol's
	// business: an error answer, and the server goes on.
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_skill_script","arguments":{"skill":7}}}`)
	a := next()
	require.Equal(t, "5", string(a.ID))
	require.True(t, a.Error != nil || bytes.Contains(a.Result, []byte(`"isError":true`)), "wrong argument types are refused: %s", a.Result)
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"run_skill_script","arguments":{"skill":"hello","script":"scripts/echo.py","args_json":"{\"x\": 1}"}}}`)
	a = next()
	require.Equal(t, "6", string(a.ID))
	require.Nil(t, a.Error, "stderr: %s", &stderr)
	require.NotContains(t, string(a.Result), `"isError":true`, string(a.Result))
	require.Nil(t, cmd.ProcessState, "the server still runs")
}
