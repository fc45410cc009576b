//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/internal/testserve"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The server tests start the real `sandboxrun serve` on loopback against the
// real engine, as an agent host would.

type liveServer struct {
	url    string
	cmd    *exec.Cmd
	stderr *testserve.Log
	done   <-chan struct{} // closed when the process has ended; exit says how
	exit   func() error
	token  string
}

// startServer runs `sandboxrun serve` on a free loopback port with skills
// under root and waits until /readyz answers.
func startServer(t *testing.T, root string, args ...string) *liveServer {
	t.Helper()
	return startServerAt(t, "", root, args...)
}

// startServerAt is startServer on a given address ("": a free port).
func startServerAt(t *testing.T, addr, root string, args ...string) *liveServer {
	t.Helper()
	return startServerEnv(t, nil, addr, root, args...)
}

// startServerEnv is startServerAt with env added to the test's environment.
func startServerEnv(t *testing.T, env []string, addr, root string, args ...string) *liveServer {
	t.Helper()
	return startServerProbe(t, "/readyz", env, addr, root, args...)
}

// startServerProbe is startServerEnv waiting for probe (/readyz, or
// /healthz, which never asks the engine) to answer 200.
func startServerProbe(t *testing.T, probe string, env []string, addr, root string, args ...string) *liveServer {
	t.Helper()
	srv, err := testserve.Start(testserve.Options{
		Bin: sandboxrunBin(t), Args: append([]string{"--skills", root, "serve"}, args...),
		Env: env, Listen: addr, Probe: probe,
	})
	require.NoError(t, err)
	trackOwner(t, srv.Cmd.Process.Pid)
	t.Cleanup(srv.Stop)
	return &liveServer{url: srv.URL, cmd: srv.Cmd, stderr: srv.Log, done: srv.Done(), exit: srv.Exit}
}

// reply is what post returns: the status, the headers and the whole body.
type reply struct {
	StatusCode int
	Header     http.Header
}

func (s *liveServer) post(t *testing.T, path, body string, header ...string) (reply, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+path, strings.NewReader(body))
	require.NoError(t, err)
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header}, b
}

func serverSkill(t *testing.T, name string) string {
	return cliSkill(t, name, "allowed-tools: Bash(echo:*) Bash(python3:*)\n", map[string]string{
		"scripts/echo.py":   "import json, sys\nprint(json.dumps({'got': json.load(sys.stdin)}))\n",
		"scripts/wait.py":   "import time\nprint('started', flush=True)\ntime.sleep(120)\n",
		"scripts/chunks.py": "import time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(0.2)\n",
		"scripts/argv.py":   "import json, sys\nprint(json.dumps(sys.argv[1:]))\n",
	})
}

// TestServerArgv passes a script its command line over HTTP, as
// `sandboxrun run SKILL SCRIPT -- ARG...` does, exactly: each entry one
// argument, never through a shell; what cannot be an argv is a 400.
func TestServerArgv(t *testing.T) {
	const name = "srv-argv"
	srv := startServer(t, serverSkill(t, name), "--warm-pool", "0") // every container is a run's
	argv := []string{"sample.csv", "--by", "price", "two  words", "naïve ✓ 技能", "--flag=x", "", "$(id)", "'q'"}
	argvJSON, err := json.Marshal(argv)
	require.NoError(t, err)

	for _, tc := range []struct{ endpoint, body string }{
		{"run", `{"script": "scripts/argv.py", "argv": ` + string(argvJSON) + `}`},
		{"python", `{"code": "import json, sys; print(json.dumps(sys.argv[1:]))", "argv": ` + string(argvJSON) + `}`},
	} {
		resp, body := srv.post(t, "/v1/skills/"+name+"/"+tc.endpoint, tc.body)
		require.Equal(t, 200, resp.StatusCode, string(body))
		var res sandbox.Result
		require.NoError(t, json.Unmarshal(body, &res))
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var got []string
		require.NoError(t, json.Unmarshal(res.Output, &got), res.Stdout)
		require.Equal(t, argv, got, tc.endpoint)
	}

	for _, tc := range []struct{ endpoint, body, want string }{
		{"run", `{"script": "scripts/argv.py", "argv": ["ok", "a\u0000b"]}`, "argument 2 contains a NUL byte"},
		{"python", `{"code": "1", "argv": ["\u0000"]}`, "argument 1 contains a NUL byte"},
		{"run", `{"script": "scripts/argv.py", "argv": ["` + strings.Repeat("x", 128<<10) + `"]}`, "over the 131071-byte limit"},
		{"exec", `{"command": "echo hi", "argv": ["x"]}`, `write them into \"command\"`},
	} {
		resp, body := srv.post(t, "/v1/skills/"+name+"/"+tc.endpoint, tc.body)
		require.Equal(t, 400, resp.StatusCode, string(body))
		require.Contains(t, string(body), tc.want)
	}
	eventuallyNoContainers(t, sandbox.LabelSkill+"="+name)
}

func TestServerRunsSkillsInRealSandboxes(t *testing.T) {
	t.Parallel()
	const name = "srv-basic"
	// No warm pool: the skill's containers are the runs' (TestWarm* cover
	// the default).
	srv := startServer(t, serverSkill(t, name), "--warm-pool", "0")

	resp, body := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py", "args": {"n": 7}}`)
	require.Equal(t, 200, resp.StatusCode, string(body))
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(body, &res))
	require.True(t, res.Success)
	require.JSONEq(t, `{"got": {"n": 7}}`, string(res.Output))

	resp, body = srv.post(t, "/v1/skills/"+name+"/exec", `{"command": "echo one && python3 -c 'print(2)'"}`)
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, &res))
	require.Equal(t, "one\n2\n", res.Stdout)

	resp, body = srv.post(t, "/v1/skills/"+name+"/exec", `{"command": "cat /etc/passwd"}`)
	require.Equal(t, 403, resp.StatusCode, string(body))
	require.Contains(t, string(body), "Bash(cat:*)")

	resp, body = srv.post(t, "/v1/skills/"+name+"/python", `{"code": "import os; print(sorted(os.listdir('/sys/class/net')))"}`)
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, &res))
	require.Equal(t, "['lo']\n", res.Stdout, "no network but loopback")

	// Streaming: lines arrive as the script prints them, the Result last.
	req, err := http.NewRequest("POST", srv.url+"/v1/skills/"+name+"/run", strings.NewReader(`{"script": "scripts/chunks.py"}`))
	require.NoError(t, err)
	req.Header.Set("Accept", "application/x-ndjson")
	sresp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer sresp.Body.Close()
	var types []string
	sc := bufio.NewScanner(sresp.Body)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		types = append(types, ev.Type)
	}
	require.GreaterOrEqual(t, len(types), 2)
	require.Equal(t, "stdout", types[0])
	require.Equal(t, "result", types[len(types)-1])

	metrics, err := http.Get(srv.url + "/metrics")
	require.NoError(t, err)
	text, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	require.Contains(t, string(text), fmt.Sprintf(`sandboxrun_executions_total{outcome="success",skill=%q,source="operator"} 4`, name))
	require.Contains(t, string(text), fmt.Sprintf(`sandboxrun_executions_total{outcome="refused",skill=%q,source="operator"} 1`, name))
	eventuallyNoSkillContainers(t, name)
}

func TestServerAuth(t *testing.T) {
	t.Parallel()
	const name = "srv-auth"
	tokens := filepath.Join(t.TempDir(), "tokens")
	const token = "integration-token-0123456789"
	require.NoError(t, os.WriteFile(tokens, []byte("# agents\n"+token+"\n"), 0o600))
	srv := startServer(t, serverSkill(t, name), "--tokens", tokens)

	resp, _ := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`)
	require.Equal(t, 401, resp.StatusCode)
	resp, _ = srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`, "Authorization", "Bearer not-the-token-at-all")
	require.Equal(t, 401, resp.StatusCode)
	srv.token = token
	resp, body := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`)
	require.Equal(t, 200, resp.StatusCode, string(body))

	// Without tokens, only loopback or a unix socket.
	r := cli(t, "", nil, "", "--skills", ".", "serve", "--listen", "0.0.0.0:0")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--tokens")
}

func TestServerOverloadIs429(t *testing.T) {
	t.Parallel()
	const name = "srv-busy"
	// No warm pool: a run that started refills it for the skill's next
	// run, and that container would be told from a leaked one only by
	// timing. Without it, any container of the skill left is a leak.
	srv := startServer(t, serverSkill(t, name), "--max-running", "1", "--max-queued", "1", "--warm-pool", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 2 { // one runs, one waits
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.url+"/v1/skills/"+name+"/run", strings.NewReader(`{"script": "scripts/wait.py"}`))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get(srv.url + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "sandboxrun_queue_length 1") && strings.Contains(string(b), "sandboxrun_executions_in_flight 1")
	}, 60*time.Second, 50*time.Millisecond)
	resp, body := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`)
	require.Equal(t, 429, resp.StatusCode, string(body))
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	// The running one is past its start, whatever the machine's load:
	// its cancellation is a kill, not an abandoned create.
	require.Eventually(t, func() bool {
		left := skillContainers(t, name)
		return len(left) == 1 && strings.Contains(left[0], "(running:")
	}, 60*time.Second, 50*time.Millisecond, "the first run's sandbox is running")

	cancel() // both clients leave: their runs are cancelled and removed
	wg.Wait()
	var left []string
	if !assert.Eventually(t, func() bool {
		left = skillContainers(t, name)
		return len(left) == 0
	}, 60*time.Second, 100*time.Millisecond) {
		t.Fatalf("a disconnected client's sandbox is not removed: %v\nserver log:\n%s", left, srv.stderr)
	}
}

func TestServerDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	const name = "srv-drain"
	srv := startServer(t, serverSkill(t, name), "--drain", "2s")
	started := make(chan struct{})
	finished := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.url+"/v1/skills/"+name+"/run", strings.NewReader(`{"script": "scripts/wait.py"}`))
		req.Header.Set("Accept", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			finished <- -1
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err == nil {
			close(started)
		}
		_, _ = io.Copy(io.Discard, br)
		finished <- resp.StatusCode
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not start; stderr: %s", srv.stderr)
	}
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-srv.done:
		require.NoError(t, srv.exit(), "serve exits 0 after draining; stderr: %s", srv.stderr)
	case <-time.After(90 * time.Second):
		t.Fatalf("serve did not exit after SIGTERM; stderr: %s", srv.stderr)
	}
	require.Equal(t, 200, <-finished)
	eventuallyNoSkillContainers(t, name)
}

func TestServerRestartReapsWhatAKilledServerLeft(t *testing.T) {
	// Serial (see main_test.go): leaves a dead owner's sandbox that any other sandboxrun process would reap.
	const name = "srv-killed"
	root := serverSkill(t, name)
	srv := startServer(t, root)
	started := make(chan struct{})
	go func() {
		req, _ := http.NewRequest("POST", srv.url+"/v1/skills/"+name+"/run", strings.NewReader(`{"script": "scripts/wait.py"}`))
		req.Header.Set("Accept", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err == nil {
			close(started)
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not start; stderr: %s", srv.stderr)
	}
	require.NoError(t, srv.cmd.Process.Kill())
	<-srv.done
	require.NotEmpty(t, skillContainers(t, name), "SIGKILL leaves the running sandbox behind")

	// No warm pool in the next one: every container of the skill left
	// once its run is done is one the reaping missed.
	next := startServer(t, root, "--warm-pool", "0")
	resp, body := next.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py"}`)
	require.Equal(t, 200, resp.StatusCode, string(body))
	eventuallyNoSkillContainers(t, name)
}

// TestServerMCPOverStreamableHTTP: serve mounts the MCP server at /mcp,
// behind the same tokens, and a real skill runs through it.
func TestServerMCPOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	const name = "srv-mcp"
	tokens := filepath.Join(t.TempDir(), "tokens")
	const token = "mcp-integration-token-0123456789"
	require.NoError(t, os.WriteFile(tokens, []byte(token+"\n"), 0o600))
	srv := startServer(t, serverSkill(t, name), "--tokens", tokens, "--warm-pool", "0")

	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "integration", Version: "v0"}, nil)
	_, err := client.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.url + "/mcp"}, nil)
	require.Error(t, err, "no token, no session")

	authed := &http.Client{Transport: bearer{token: token}}
	cs, err := client.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.url + "/mcp", HTTPClient: authed}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: map[string]any{
		"skill": name, "script": "scripts/echo.py", "args_json": `{"via": "mcp"}`,
	}})
	require.NoError(t, err)
	require.False(t, res.IsError, mcptest.Text(res))
	var out mcp.RunOutput
	decodeTool(t, res, &out)
	require.Equal(t, map[string]any{"got": map[string]any{"via": "mcp"}}, out.Output)
	eventuallyNoSkillContainers(t, name)
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServerWarmPoolMetrics: with --warm-pool the second run takes a warm
// container, and /metrics says so.
func TestServerWarmPoolMetrics(t *testing.T) {
	t.Parallel()
	const name = "srv-warm"
	srv := startServer(t, serverSkill(t, name), "--warm-pool", "1")
	for range 2 {
		resp, body := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py", "args": {}}`)
		require.Equal(t, 200, resp.StatusCode, string(body))
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get(srv.url + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		text := string(b)
		return strings.Contains(text, "sandboxrun_warm_pool_size 1") &&
			strings.Contains(text, "sandboxrun_warm_pool_hits_total 1") &&
			strings.Contains(text, "sandboxrun_warm_pool_misses_total 1")
	}, 60*time.Second, 100*time.Millisecond)
}
