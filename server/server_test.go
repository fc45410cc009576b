package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/server"
)

// engine is a fake backend: it echoes the job, or blocks until released or
// cancelled when block is set.
type engine struct {
	mu       sync.Mutex
	runs     int
	block    chan struct{}
	started  chan struct{}
	canceled chan struct{}
	// traceParent is the last run's Spec.TraceParent.
	traceParent string
	// usageEvery is the last run's Spec.UsageEvery; usageSent whether it
	// had a Spec.Usage to send a sample to.
	usageEvery time.Duration
	usageSent  bool
}

func (e *engine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	e.mu.Lock()
	e.runs++
	e.traceParent = spec.TraceParent
	e.usageEvery, e.usageSent = spec.UsageEvery, spec.Usage != nil
	e.mu.Unlock()
	if e.started != nil {
		e.started <- struct{}{}
	}
	if e.block != nil {
		select {
		case <-e.block:
		case <-ctx.Done():
			if e.canceled != nil {
				close(e.canceled)
			}
			return &sandbox.Result{Started: true, Skill: spec.Skill, ExitCode: -1}, ctx.Err()
		}
	}
	if spec.Stdout != nil {
		_, _ = spec.Stdout.Write([]byte("chunk one\n"))
		_, _ = spec.Stderr.Write([]byte("warn\n"))
	}
	if spec.Usage != nil && spec.UsageEvery > 0 {
		spec.Usage(sandbox.Usage{ElapsedMS: 2000, CPUPercent: 99.5, MemoryBytes: 3 << 20, Pids: 2})
	}
	return &sandbox.Result{
		ID: "run1", Skill: spec.Skill, Command: spec.Argv, Success: true, Started: true,
		Stdout: string(spec.Stdin), Output: json.RawMessage("null"), Limits: spec.Limits,
		Image: spec.Image, Runtime: spec.Runtime,
	}, nil
}

func (e *engine) CheckImage(context.Context, string) (string, error) { return "sha256:x", nil }
func (e *engine) Ping(context.Context) error                         { return nil }
func (e *engine) Close() error                                       { return nil }

type fixture struct {
	url     string
	eng     *engine
	metrics *server.Metrics
}

func start(t *testing.T, eng *engine, o server.Options) fixture {
	t.Helper()
	return startAdmitting(t, eng, sandboxrun.Config{}, o)
}

// startAdmitting is start with the Service's admission (MaxConcurrent,
// MaxQueued, QueueWait) taken from cfg.
func startAdmitting(t *testing.T, eng *engine, cfg sandboxrun.Config, o server.Options) fixture {
	t.Helper()
	if eng == nil {
		eng = &engine{}
	}
	metrics := server.NewMetrics()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, Observer: metrics,
		MaxConcurrent: cfg.MaxConcurrent, MaxQueued: cfg.MaxQueued, QueueWait: cfg.QueueWait})
	require.NoError(t, err)
	o.Service = svc
	srv, err := server.New(o)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return fixture{url: ts.URL, eng: eng, metrics: metrics}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func call(t *testing.T, method, url, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestRunEndpoints(t *testing.T) {
	f := start(t, nil, server.Options{})
	tests := []struct {
		name, path, body string
		argv0            string
	}{
		{"run", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "args": {"x": 1}}`, "python3"},
		{"exec", "/v1/skills/hello/exec", `{"command": "echo hi"}`, "bash"},
		{"python", "/v1/skills/hello/python", `{"code": "print(1)", "timeout": 5}`, "python3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "POST", f.url+tt.path, tt.body)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			requireSchema(t, "Result", r.body)
			var res sandbox.Result
			require.NoError(t, json.Unmarshal(r.body, &res))
			require.Equal(t, tt.argv0, res.Command[0])
			require.NotEmpty(t, r.header.Get("X-Request-Id"))
		})
	}
}

func TestErrorsHaveTheirStatus(t *testing.T) {
	f := start(t, nil, server.Options{})
	tests := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"denied command", "/v1/skills/hello/exec", `{"command": "curl http://x"}`, 403, "Bash(curl:*)"},
		{"limit above the ceiling", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "timeout": 100000}`, 403, "timeout"},
		{"reserved variable", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "env": {"BASH_ENV": "/x"}}`, 403, "BASH_ENV"},
		{"script outside the skill", "/v1/skills/hello/run", `{"script": "../../etc/passwd"}`, 403, `\"..\"`},
		{"host path to a script", "/v1/skills/hello/run", `{"script": "/etc/passwd"}`, 403, "absolute path"},
		{"data file, not a script", "/v1/skills/hello/run", `{"script": "SKILL.md"}`, 403, "scripts"},
		{"unknown skill", "/v1/skills/nope/run", `{"script": "scripts/x.py"}`, 404, "nope"},
		{"skill named by an encoded path", "/v1/skills/..%2Fhello/run", `{"script": "scripts/echo.py"}`, 400, "percent-encodes"},
		{"unknown field", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "image": "alpine"}`, 400, "image"},
		{"field of another endpoint", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "command": "id"}`, 400, "command"},
		{"missing field", "/v1/skills/hello/exec", `{}`, 400, "command"},
		{"not JSON", "/v1/skills/hello/exec", `command=id`, 400, "JSON"},
		{"two values", "/v1/skills/hello/exec", `{"command": "echo"} {}`, 400, "more than one"},
		{"workspace as a path", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "workspace": "/etc"}`, 400, "workspace"},
		{"workspace ids became sessions", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "workspace": "w1"}`, 400, "POST /v1/sessions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "POST", f.url+tt.path, tt.body)
			require.Equal(t, tt.status, r.status, string(r.body))
			requireSchema(t, "Error", r.body)
			require.Contains(t, string(r.body), tt.want)
		})
	}
	require.Zero(t, f.eng.runs, "nothing refused reached the engine")

	r := call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "rm -rf /"}`)
	var e map[string]string
	require.NoError(t, json.Unmarshal(r.body, &e))
	require.Equal(t, "rm -rf /", e["part"], "a denial names the part")
	require.Equal(t, "Bash(rm:*)", e["suggest"])
}

func TestSkillsAndActivation(t *testing.T) {
	f := start(t, nil, server.Options{})
	r := call(t, "GET", f.url+"/v1/skills", "")
	require.Equal(t, 200, r.status)
	requireSchema(t, "SkillList", r.body)
	require.Contains(t, string(r.body), `"hello"`)
	require.NotContains(t, string(r.body), "# Hello", "the list holds no body")

	r = call(t, "GET", f.url+"/v1/skills/hello", "")
	require.Equal(t, 200, r.status)
	requireSchema(t, "Activation", r.body)
	require.Contains(t, string(r.body), "/skills/hello")

	r = call(t, "GET", f.url+"/v1/skills/nope", "")
	require.Equal(t, 404, r.status)
	requireSchema(t, "Error", r.body)
}

func TestTokens(t *testing.T) {
	const token = "0123456789abcdef-test"
	f := start(t, nil, server.Options{Tokens: server.NewTokens(token)})
	for _, path := range []string{"/v1/skills", "/v1/skills/hello", "/metrics", "/v1/openapi.json"} {
		r := call(t, "GET", f.url+path, "")
		require.Equal(t, 401, r.status, path)
		require.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
		requireSchema(t, "Error", r.body)
		require.Equal(t, 401, call(t, "GET", f.url+path, "", "Authorization", "Bearer wrong-token-0123456789").status)
		require.Equal(t, 401, call(t, "GET", f.url+path, "", "Authorization", "Basic "+token).status)
		require.Equal(t, 200, call(t, "GET", f.url+path, "", "Authorization", "Bearer "+token).status, path)
	}
	r := call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "echo"}`)
	require.Equal(t, 401, r.status)
	require.Zero(t, f.eng.runs)
	require.Equal(t, 200, call(t, "GET", f.url+"/healthz", "").status, "probes need no token")
	require.Equal(t, 200, call(t, "GET", f.url+"/readyz", "").status)
}

func TestQueueFullIs429(t *testing.T) {
	eng := &engine{block: make(chan struct{}), started: make(chan struct{}, 4)}
	f := startAdmitting(t, eng, sandboxrun.Config{MaxConcurrent: 1, MaxQueued: 1, QueueWait: 10 * time.Second}, server.Options{})
	body := `{"command": "echo hi"}`
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- call(t, "POST", f.url+"/v1/skills/hello/exec", body).status
		}()
	}
	<-eng.started // one runs; the other waits in the queue
	require.Eventually(t, func() bool {
		return strings.Contains(metricsText(t, f.url), "sandboxrun_queue_length 1")
	}, 5*time.Second, 10*time.Millisecond)

	r := call(t, "POST", f.url+"/v1/skills/hello/exec", body)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "1", r.header.Get("Retry-After"))
	requireSchema(t, "Error", r.body)

	close(eng.block)
	<-eng.started
	wg.Wait()
	close(codes)
	for c := range codes {
		require.Equal(t, 200, c, "admitted requests complete")
	}
}

func TestQueueWaitEndsIn429(t *testing.T) {
	eng := &engine{block: make(chan struct{}), started: make(chan struct{}, 4)}
	f := startAdmitting(t, eng, sandboxrun.Config{MaxConcurrent: 1, MaxQueued: 4, QueueWait: 50 * time.Millisecond}, server.Options{})
	done := make(chan int, 1)
	go func() { done <- call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "echo"}`).status }()
	<-eng.started
	r := call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "echo"}`)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	close(eng.block)
	require.Equal(t, 200, <-done)
}

func TestDisconnectCancelsTheRun(t *testing.T) {
	eng := &engine{block: make(chan struct{}), started: make(chan struct{}, 1), canceled: make(chan struct{})}
	f := start(t, eng, server.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", f.url+"/v1/skills/hello/exec", strings.NewReader(`{"command": "echo"}`))
	require.NoError(t, err)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-eng.started
	cancel()
	select {
	case <-eng.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the run's context was not cancelled when the client went away")
	}
	require.Eventually(t, func() bool {
		return strings.Contains(metricsText(t, f.url), `sandboxrun_executions_total{outcome="canceled",skill="hello",source="operator"} 1`)
	}, 5*time.Second, 10*time.Millisecond)
}

func TestStreams(t *testing.T) {
	f := start(t, nil, server.Options{})
	t.Run("ndjson", func(t *testing.T) {
		r := call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "echo hi"}`, "Accept", "application/x-ndjson")
		require.Equal(t, 200, r.status)
		require.Equal(t, "application/x-ndjson", r.header.Get("Content-Type"))
		var types []string
		sc := bufio.NewScanner(strings.NewReader(string(r.body)))
		for sc.Scan() {
			requireSchema(t, "Event", sc.Bytes())
			var ev map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
			types = append(types, ev["type"].(string))
		}
		require.Equal(t, []string{"stdout", "stderr", "usage", "result"}, types)
	})
	t.Run("sse", func(t *testing.T) {
		r := call(t, "POST", f.url+"/v1/skills/hello/python", `{"code": "print(1)"}`, "Accept", "text/event-stream")
		require.Equal(t, 200, r.status)
		require.Equal(t, "text/event-stream", r.header.Get("Content-Type"))
		var events []string
		for _, block := range strings.Split(strings.TrimSpace(string(r.body)), "\n\n") {
			lines := strings.SplitN(block, "\n", 2)
			require.Len(t, lines, 2, block)
			events = append(events, strings.TrimPrefix(lines[0], "event: "))
			requireSchema(t, "Event", []byte(strings.TrimPrefix(lines[1], "data: ")))
		}
		require.Equal(t, []string{"stdout", "stderr", "usage", "result"}, events)
	})
	t.Run("a refusal keeps its status", func(t *testing.T) {
		r := call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "id"}`, "Accept", "application/x-ndjson")
		require.Equal(t, 403, r.status)
		requireSchema(t, "Error", r.body)
	})
}

func TestMetrics(t *testing.T) {
	f := start(t, nil, server.Options{})
	call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "echo"}`)
	call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "id"}`)
	call(t, "POST", f.url+"/v1/skills/nope/exec", `{"command": "echo"}`)
	text := metricsText(t, f.url)
	for _, want := range []string{
		`sandboxrun_executions_total{outcome="success",skill="hello",source="operator"} 1`,
		`sandboxrun_executions_total{outcome="refused",skill="hello",source="operator"} 1`,
		`sandboxrun_executions_total{outcome="refused",skill="",source=""} 1`,
		`sandboxrun_execution_duration_seconds_count{outcome="success"} 1`,
		`sandboxrun_queue_wait_seconds_count 3`,
		`sandboxrun_executions_in_flight 0`,
		`sandboxrun_warm_pool_size 0`,
		`sandboxrun_warm_pool_hits_total 0`,
		`sandboxrun_http_requests_total{code="403",route="POST /v1/skills/{name}/exec"} 1`,
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, `skill="nope"`, "unknown names do not become labels")
}

func metricsText(t *testing.T, url string) string {
	t.Helper()
	r := call(t, "GET", url+"/metrics", "")
	require.Equal(t, 200, r.status)
	return string(r.body)
}

func TestArgv(t *testing.T) {
	f := start(t, nil, server.Options{})
	argv := []string{"sample.csv", "--by", "price", "two words", "naïve ✓", "--flag=x", ""}
	argvJSON, err := json.Marshal(argv)
	require.NoError(t, err)
	tests := []struct {
		name, path, schema, body string
		program                  []string
	}{
		{"run", "/v1/skills/hello/run", "RunRequest", `{"script": "scripts/echo.py", "argv": ` + string(argvJSON) + `}`, []string{"python3", "/skills/hello/scripts/echo.py"}},
		{"python", "/v1/skills/hello/python", "PythonRequest", `{"code": "import sys", "argv": ` + string(argvJSON) + `}`, []string{"python3", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSchema(t, tt.schema, []byte(tt.body))
			r := call(t, "POST", f.url+tt.path, tt.body)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			var res sandbox.Result
			require.NoError(t, json.Unmarshal(r.body, &res))
			require.Equal(t, append(tt.program, argv...), res.Command, "each argument reaches the program as one argv entry, exactly")
		})
	}

	refusals := []struct {
		name, path, body string
		want             string
	}{
		{"on exec", "/v1/skills/hello/exec", `{"command": "echo hi", "argv": ["x"]}`, `a command carries its own arguments, write them into \"command\"`},
		{"NUL byte", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "argv": ["ok", "a\u0000b"]}`, "argument 2 contains a NUL byte"},
		{"NUL byte, python", "/v1/skills/hello/python", `{"code": "1", "argv": ["\u0000"]}`, "argument 1 contains a NUL byte"},
		{"too many", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "argv": [` + strings.Repeat(`"a",`, 4096) + `"a"]}`, "4097 arguments, over the limit of 4096"},
		{"too long", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "argv": ["` + strings.Repeat("x", 128<<10) + `"]}`, "over the 131071-byte limit"},
		{"not strings", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "argv": [1]}`, "argv"},
		{"not a list", "/v1/skills/hello/run", `{"script": "scripts/echo.py", "argv": "a b"}`, "argv"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "POST", f.url+tt.path, tt.body)
			require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
			requireSchema(t, "Error", r.body)
			require.Contains(t, string(r.body), tt.want)
		})
	}
	require.Equal(t, len(tests), f.eng.runs, "no refused argv reached the engine")

	// An empty list on exec asks for nothing the command lacks.
	r := call(t, "POST", f.url+"/v1/skills/hello/exec", `{"command": "echo hi", "argv": []}`)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
}
