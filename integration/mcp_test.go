//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/internal/testlog"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The MCP tests drive `sandboxrun mcp` the way a host does: the SDK's client
// starts it as a subprocess and speaks the protocol over its stdin/stdout;
// every run happens in a real sandbox.

// mcpServer is one `sandboxrun mcp` subprocess and a client session on it.
type mcpServer struct {
	cmd      *exec.Cmd
	cs       *mcpsdk.ClientSession
	stderr   *syncBuffer
	audit    string
	stdin    io.WriteCloser // with launchMCP(t, true)
	progress chan *mcpsdk.ProgressNotificationParams
}

// startMCP launches the server with the SDK's command transport, as hosts
// do.
func startMCP(t *testing.T, args ...string) *mcpServer {
	t.Helper()
	return launchMCP(t, false, args...)
}

// launchMCP launches the server; with ownPipes the test holds the server's
// stdin itself (s.stdin), to end the connection the way a host that dies
// does, without the client's orderly close. args follow the defaults.
func launchMCP(t *testing.T, ownPipes bool, args ...string) *mcpServer {
	t.Helper()
	s := &mcpServer{
		stderr:   &syncBuffer{},
		audit:    filepath.Join(t.TempDir(), "audit.jsonl"),
		progress: make(chan *mcpsdk.ProgressNotificationParams, 100),
	}
	skills, err := filepath.Abs("../skills")
	require.NoError(t, err)
	s.cmd = exec.Command(sandboxrunBin(t), append([]string{"mcp", "--skills", skills, "--audit-log", s.audit}, args...)...)
	s.cmd.Stderr = s.stderr
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "integration", Version: "v0"}, &mcpsdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
			select {
			case s.progress <- req.Params:
			default:
			}
		},
	})
	var transport mcpsdk.Transport = &mcpsdk.CommandTransport{Command: s.cmd}
	if ownPipes {
		stdout, err := s.cmd.StdoutPipe()
		require.NoError(t, err)
		s.stdin, err = s.cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, s.cmd.Start())
		transport = &mcpsdk.IOTransport{Reader: stdout, Writer: s.stdin}
	}
	s.cs, err = client.Connect(context.Background(), transport, nil)
	require.NoError(t, err)
	trackOwner(t, s.cmd.Process.Pid)
	t.Cleanup(func() {
		_ = s.cs.Close()
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
		}
	})
	return s
}

// containers lists the sandboxes the server process owns.
func (s *mcpServer) containers(t *testing.T) []string {
	t.Helper()
	left, err := listContainers(context.Background(), sandbox.LabelOwnerPID+"="+strconv.Itoa(s.cmd.Process.Pid))
	require.NoError(t, err)
	return left
}

// requireNoContainers waits a bounded time for the server's sandboxes to be
// removed: removal runs after the cancellation, not before it is answered.
func (s *mcpServer) requireNoContainers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(s.containers(t)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	require.Empty(t, s.containers(t), "sandbox left behind; server stderr: %s", s.stderr.String())
}

// syncBuffer collects a subprocess's stderr while tests read it.
type syncBuffer = testlog.Buffer

func (s *mcpServer) call(t *testing.T, tool string, args map[string]any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "server stderr: %s", s.stderr.String())
	return res
}

func decodeTool(t *testing.T, res *mcpsdk.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), "structured content: %s", b)
}

// auditLines are the audit log's records of runs and refusals; the lines
// of session and upload calls ("op": the connection's own session is
// one) are left out.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var recs []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if _, op := r["op"]; !op {
			recs = append(recs, r)
		}
	}
	return recs
}

func TestMCPStdioRunsSkillsInRealSandboxes(t *testing.T) {
	t.Parallel()
	s := startMCP(t)

	res := s.call(t, mcp.ToolActivateSkill, map[string]any{"skill": "hello"})
	require.False(t, res.IsError, mcptest.Text(res))
	require.Contains(t, mcptest.Text(res), "python3 /skills/hello/scripts/echo.py")

	res = s.call(t, mcp.ToolRunScript, map[string]any{"skill": "hello", "script": "scripts/echo.py", "args_json": `{"greeting": "hi"}`})
	require.False(t, res.IsError, mcptest.Text(res))
	var out mcp.RunOutput
	decodeTool(t, res, &out)
	require.True(t, out.Success)
	require.Equal(t, map[string]any{"skill": "hello", "runtime": "python", "args": map[string]any{"greeting": "hi"}}, out.Output)
	eventuallyNoContainers(t, sandbox.LabelRunID+"="+out.ID)

	res = s.call(t, mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": `echo '{"n": 1}' | python3 {baseDir}/scripts/echo.py`})
	require.False(t, res.IsError, mcptest.Text(res))
	decodeTool(t, res, &out)
	require.Equal(t, map[string]any{"n": float64(1)}, out.Output.(map[string]any)["args"])

	res = s.call(t, mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": "id; cat /etc/hostname"})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), `command denied at "id"`)
	require.Contains(t, mcptest.Text(res), "add Bash(id:*) to the skill's allowed-tools")

	res = s.call(t, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "import socket, os\nprint(sorted(socket.if_nameindex()), os.getuid() != 0)"})
	require.False(t, res.IsError, mcptest.Text(res))
	var py sandboxrun.PythonResult
	decodeTool(t, res, &py)
	require.Equal(t, "[(1, 'lo')] True\n", py.Stdout, "loopback only, not root")

	res = s.call(t, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "raise SystemExit(3)"})
	require.True(t, res.IsError)
	decodeTool(t, res, &py)
	require.Equal(t, 3, py.ReturnCode)

	read, err := s.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "skill://hello/scripts/echo.py"})
	require.NoError(t, err)
	require.Contains(t, read.Contents[0].Text, "json")

	recs := auditLines(t, s.audit)
	require.Len(t, recs, 5, "four runs and one refusal")
	require.Equal(t, true, recs[2]["refused"])
	require.Equal(t, out.ID, recs[1]["run_id"])
}

// TestMCPArgv runs an argparse script with its command line, as a model
// over MCP asks for `scripts/top.py FILE --by price -n 2`, and passes argv
// to inline Python exactly.
func TestMCPArgv(t *testing.T) {
	s := startMCP(t, "--warm-pool", "0") // every container is a run's

	res := s.call(t, mcp.ToolRunScript, map[string]any{
		"skill": "data-analysis", "script": "scripts/top.py",
		"argv":      []string{"/skills/data-analysis/assets/sample.csv", "--by", "price", "-n", "2"},
		"args_json": nil, "timeout_seconds": nil, // as an OpenAI strict-mode model writes it
	})
	require.False(t, res.IsError, mcptest.Text(res))
	var out mcp.RunOutput
	decodeTool(t, res, &out)
	top, ok := out.Output.(map[string]any)
	require.True(t, ok, "stdout: %s", out.Stdout)
	require.Equal(t, "price", top["by"])
	require.Len(t, top["rows"], 2)

	argv := []string{"two  words", "naïve ✓ 技能", "--flag=x", "", "$(id)", "'q'"}
	res = s.call(t, mcp.ToolRunPython, map[string]any{
		"skill": "hello", "code": "import json, sys; print(json.dumps(sys.argv[1:]))", "argv": argv,
	})
	require.False(t, res.IsError, mcptest.Text(res))
	var py sandboxrun.PythonResult
	decodeTool(t, res, &py)
	var got []string
	require.NoError(t, json.Unmarshal([]byte(py.Stdout), &got), py.Stdout)
	require.Equal(t, argv, got)

	res = s.call(t, mcp.ToolRunScript, map[string]any{"skill": "hello", "script": "scripts/echo.py", "argv": []string{"a\x00b"}})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "argument 1 contains a NUL byte")
	res = s.call(t, mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": "echo hi", "argv": []string{"x"}})
	require.True(t, res.IsError, "a command carries its own arguments")
	s.requireNoContainers(t)
}

// TestMCPCancellationRemovesTheSandbox cancels a call while its script runs:
// the client's notifications/cancelled reaches the run, whose container is
// removed, and the server keeps serving.
func TestMCPCancellationRemovesTheSandbox(t *testing.T) {
	t.Parallel()
	// No warm pool: every container the server owns is the run's.
	s := startMCP(t, "--warm-pool", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		params := &mcpsdk.CallToolParams{Name: mcp.ToolRunPython, Arguments: map[string]any{
			"skill": "hello", "code": "import time\nprint('started', flush=True)\ntime.sleep(120)", "timeout_seconds": 300,
		}}
		params.SetProgressToken("cancel-me")
		_, err := s.cs.CallTool(ctx, params)
		errs <- err
	}()
	waitForOutput(t, s)
	require.Len(t, s.containers(t), 1, "the run's sandbox exists")

	start := time.Now()
	cancel()
	require.ErrorIs(t, <-errs, context.Canceled)
	s.requireNoContainers(t)
	t.Logf("sandbox removed %s after the client cancelled", time.Since(start).Round(time.Millisecond))

	// The run was recorded as cancelled, and the server still answers.
	deadline := time.Now().Add(10 * time.Second)
	for len(auditLines(t, s.audit)) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	recs := auditLines(t, s.audit)
	require.Len(t, recs, 1)
	require.Contains(t, recs[0]["error"], "cancel")
	res := s.call(t, mcp.ToolListSkills, nil)
	require.False(t, res.IsError)
}

// waitForOutput waits for a progress report counting the script's first
// output: the script is running inside its sandbox.
func waitForOutput(t *testing.T, s *mcpServer) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case p := <-s.progress:
			if strings.Contains(p.Message, "running for") && !strings.Contains(p.Message, " 0B of output") {
				return
			}
		case <-timeout:
			require.FailNow(t, "no progress report of output", "server stderr: %s", s.stderr.String())
		}
	}
}

// TestMCPServerEndRemovesSandboxes ends the server mid-run both ways a host
// does: its stdin closes (the host exited), or SIGTERM. Either way the run
// stops, its sandbox is removed and the process exits 0.
func TestMCPServerEndRemovesSandboxes(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stdin closed", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			s := launchMCP(t, true)
			go func() {
				params := &mcpsdk.CallToolParams{Name: mcp.ToolRunCommand, Arguments: map[string]any{
					"skill": "hello", "command": "echo started && python3 -c 'import time; time.sleep(120)'", "timeout_seconds": 300,
				}}
				params.SetProgressToken(1)
				_, _ = s.cs.CallTool(context.Background(), params)
			}()
			waitForOutput(t, s)
			require.Len(t, s.containers(t), 1)
			pid := s.cmd.Process.Pid

			start := time.Now()
			if how == "SIGTERM" {
				require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
			} else {
				require.NoError(t, s.stdin.Close())
			}
			exited := make(chan error, 1)
			go func() { exited <- s.cmd.Wait() }()
			select {
			case err := <-exited:
				require.NoError(t, err, "exit status 0; stderr: %s", s.stderr.String())
			case <-time.After(time.Minute):
				require.FailNow(t, "the server kept running", "stderr: %s", s.stderr.String())
			}
			t.Logf("%s: the server exited %s after", how, time.Since(start).Round(time.Millisecond))
			left, err := listContainers(context.Background(), sandbox.LabelOwnerPID+"="+strconv.Itoa(pid))
			require.NoError(t, err)
			require.Empty(t, left, "the run's sandbox was removed before the server exited")
		})
	}
}

// TestMCPStreamableHTTPRunsARealSkill serves the handler sandboxrun serve
// mounts, on loopback, over a real Service.
func TestMCPStreamableHTTPRunsARealSkill(t *testing.T) {
	t.Parallel()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Backend: backends.New, Images: backends.Images()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	srv := httptest.NewServer(mcp.HTTPHandler(svc))
	t.Cleanup(srv.Close)

	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "integration", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	// One session, calls in parallel, as a host may make them.
	var wg sync.WaitGroup
	results := make([]*mcpsdk.CallToolResult, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: map[string]any{
				"skill": "hello", "script": "scripts/echo.js", "args_json": `{"i": ` + strconv.Itoa(i) + `}`,
			}})
		}()
	}
	wg.Wait()
	for i, res := range results {
		require.NoError(t, errs[i])
		require.False(t, res.IsError, mcptest.Text(res))
		var out mcp.RunOutput
		decodeTool(t, res, &out)
		require.True(t, out.Success, "run %d: %+v", i, out)
		require.Equal(t, float64(i), out.Output.(map[string]any)["args"].(map[string]any)["i"])
		eventuallyNoContainers(t, sandbox.LabelRunID+"="+out.ID)
	}
}
