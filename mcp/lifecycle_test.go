package mcp_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// blockingEngine runs until released or cancelled, writing some output
// first, and says when it started and how it ended.
type blockingEngine struct {
	fakeEngine
	started  chan struct{}
	release  chan struct{}
	finished chan error // the run's ctx error, nil when released
}

func newBlockingEngine() *blockingEngine {
	b := &blockingEngine{started: make(chan struct{}, 1), release: make(chan struct{}), finished: make(chan error, 1)}
	b.run = func(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		if spec.Stdout != nil {
			_, _ = io.WriteString(spec.Stdout, strings.Repeat("x", 2048))
		}
		b.started <- struct{}{}
		select {
		case <-b.release:
			b.finished <- nil
			return result(spec, 0, "done", ""), nil
		case <-ctx.Done():
			// What the Docker runner does: kill and remove the container,
			// then report the cancellation.
			b.finished <- ctx.Err()
			res := result(spec, -9, "", "")
			res.Signal = "SIGKILL"
			return res, ctx.Err()
		}
	}
	return b
}

// wait fails the test when ch stays silent.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		require.FailNow(t, "timed out waiting: "+what)
	}
	var zero T
	return zero
}

func TestProgressIsReportedWhenAskedFor(t *testing.T) {
	eng := newBlockingEngine()
	progress := newProgressLog()
	cs := connect(t, mcp.NewServer(service(t, &eng.fakeEngine), mcp.WithProgressInterval(5*time.Millisecond)), progress)

	done := make(chan *mcpsdk.CallToolResult, 1)
	go func() {
		params := &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: argsFor(mcp.ToolRunScript, "hello")}
		params.SetProgressToken("tok-1")
		res, err := cs.CallTool(context.Background(), params)
		if err == nil {
			done <- res
		}
		close(done)
	}()
	wait(t, eng.started, "the run to start")
	// Reports keep coming while it runs, and count what it wrote.
	for counted := false; !counted; {
		wait(t, progress.seen, "a progress notification")
		got := progress.all()
		counted = len(got) >= 3 && strings.Contains(got[len(got)-1].Message, "2KiB of output so far")
	}
	close(eng.release)
	res := wait(t, done, "the result")
	require.NotNil(t, res)
	require.False(t, res.IsError, mcptest.Text(res))

	got := progress.all()
	require.GreaterOrEqual(t, len(got), 3)
	require.Equal(t, "hello scripts/echo.py: starting", got[0].Message)
	for i, p := range got {
		require.Equal(t, "tok-1", p.ProgressToken)
		if i > 0 {
			require.Greater(t, p.Progress, got[i-1].Progress, "progress only grows")
			require.Contains(t, p.Message, "hello scripts/echo.py: running for ")
		}
	}
	require.NotNil(t, eng.ran()[0].Stdout, "output is counted while it runs")
}

func TestNoProgressWithoutAToken(t *testing.T) {
	eng := &fakeEngine{}
	progress := newProgressLog()
	cs := connect(t, mcp.NewServer(service(t, eng), mcp.WithProgressInterval(time.Millisecond)), progress)
	res := mcptest.Call(t, cs, mcp.ToolRunPython, argsFor(mcp.ToolRunPython, "hello"))
	require.False(t, res.IsError)
	require.Empty(t, progress.all())
	require.Nil(t, eng.ran()[0].Stdout)
}

func TestClientCancellationCancelsTheRun(t *testing.T) {
	for _, tool := range []string{mcp.ToolRunScript, mcp.ToolRunCommand, mcp.ToolRunPython} {
		t.Run(tool, func(t *testing.T) {
			eng := newBlockingEngine()
			cs := session(t, service(t, &eng.fakeEngine))
			ctx, cancel := context.WithCancel(context.Background())
			errs := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: argsFor(tool, "hello")})
				errs <- err
			}()
			wait(t, eng.started, "the run to start")
			cancel()
			require.ErrorIs(t, wait(t, errs, "the call to return"), context.Canceled)
			require.ErrorIs(t, wait(t, eng.finished, "the run to end"), context.Canceled,
				"the client's cancellation reached the run")
		})
	}
}

func TestServerShutdownCancelsRuns(t *testing.T) {
	eng := newBlockingEngine()
	base, stop := context.WithCancel(context.Background())
	cs := session(t, service(t, &eng.fakeEngine), mcp.WithBaseContext(base))
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: argsFor(mcp.ToolRunScript, "hello")})
	}()
	wait(t, eng.started, "the run to start")
	stop()
	require.ErrorIs(t, wait(t, eng.finished, "the run to end"), context.Canceled)
}

func TestServeStdio(t *testing.T) {
	eng := newBlockingEngine()
	svc := service(t, &eng.fakeEngine)
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- mcp.ServeStdio(context.Background(), svc, serverIn, serverOut) }()

	cs, err := newClient(nil).Connect(context.Background(), &mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)
	res := mcptest.Call(t, cs, mcp.ToolListSkills, nil)
	require.False(t, res.IsError)

	// A host that goes away mid-run: the run is cancelled, not left to
	// finish for nobody, and the server returns cleanly.
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: argsFor(mcp.ToolRunScript, "hello")})
	}()
	wait(t, eng.started, "the run to start")
	require.NoError(t, clientOut.Close())
	require.ErrorIs(t, wait(t, eng.finished, "the run to end"), context.Canceled)
	require.NoError(t, wait(t, served, "ServeStdio to return"))
	require.NoError(t, serverOut.Close(), "the process exits, its stdout with it")
	_ = cs.Close()
}

func TestStreamableHTTP(t *testing.T) {
	eng := newBlockingEngine()
	srv := httptest.NewServer(mcp.HTTPHandler(service(t, &eng.fakeEngine), mcp.WithProgressInterval(5*time.Millisecond)))
	t.Cleanup(srv.Close)
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), "loopback only: %s", srv.URL)

	progress := newProgressLog()
	cs, err := newClient(progress).Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, len(mcp.Tools()))
	res := mcptest.Call(t, cs, mcp.ToolActivateSkill, map[string]any{"skill": "hello"})
	require.False(t, res.IsError, mcptest.Text(res))
	res = mcptest.Call(t, cs, mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": "jq ."})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "Bash(jq:*)")

	// A run with progress, answered over the same HTTP request's stream.
	done := make(chan *mcpsdk.CallToolResult, 1)
	go func() {
		params := &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: argsFor(mcp.ToolRunScript, "hello")}
		params.SetProgressToken(7)
		r, _ := cs.CallTool(context.Background(), params)
		done <- r
	}()
	wait(t, eng.started, "the run to start")
	wait(t, progress.seen, "a progress notification over HTTP")
	eng.release <- struct{}{}
	require.NoError(t, wait(t, eng.finished, "the run to end"))
	res = wait(t, done, "the result")
	require.NotNil(t, res)
	require.False(t, res.IsError, mcptest.Text(res))

	// And a cancelled one.
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: mcp.ToolRunPython, Arguments: argsFor(mcp.ToolRunPython, "hello")})
		errs <- err
	}()
	wait(t, eng.started, "the second run to start")
	cancel()
	require.ErrorIs(t, wait(t, errs, "the call to return"), context.Canceled)
	require.ErrorIs(t, wait(t, eng.finished, "the run to end"), context.Canceled)
}

// TestStreamableHTTPSessionIDsNameTheReplica: over a Service that is one
// of several (Config.Replica), an MCP session's id names the server, so
// another replica routes to it.
func TestStreamableHTTPSessionIDsNameTheReplica(t *testing.T) {
	for _, replica := range []string{"", "r-3"} {
		t.Run("replica "+replica, func(t *testing.T) {
			svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: &newBlockingEngine().fakeEngine, Replica: replica})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, svc.Close()) })
			srv := httptest.NewServer(mcp.HTTPHandler(svc))
			t.Cleanup(srv.Close)
			cs, err := newClient(newProgressLog()).Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			got, ok := sandboxrun.ReplicaOf(cs.ID())
			if replica == "" {
				require.NotEmpty(t, cs.ID())
				require.Empty(t, got, "the SDK's own ids, named by nobody")
				return
			}
			require.True(t, ok, cs.ID())
			require.Equal(t, replica, got)
		})
	}
}
