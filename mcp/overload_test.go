package mcp_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
)

// TestRunsPastTheQueueAreTurnedAway: MCP runs are admitted by the Service
// as HTTP runs are. With one slot and one place in the queue, the third
// run finds both taken and is answered at once with an error result that
// says to retry, over stdio and over Streamable HTTP alike; the engine
// never sees it, and the admitted runs complete.
func TestRunsPastTheQueueAreTurnedAway(t *testing.T) {
	for _, door := range []string{"stdio", "http"} {
		t.Run(door, func(t *testing.T) {
			eng := newBlockingEngine()
			eng.started = make(chan struct{}, 2)
			eng.finished = make(chan error, 2)
			svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: &eng.fakeEngine,
				MaxConcurrent: 1, MaxQueued: 1, QueueWait: time.Minute})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, svc.Close()) })
			cs := connectBy(t, door, svc)

			answers := make(chan *mcpsdk.CallToolResult, 2)
			for range 2 {
				go func() {
					res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: mcp.ToolRunCommand, Arguments: argsFor(mcp.ToolRunCommand, "hello")})
					if err != nil {
						res = &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: err.Error()}}}
					}
					answers <- res
				}()
			}
			wait(t, eng.started, "the first run to start")
			require.Eventually(t, func() bool { return svc.Load() == sandboxrun.Load{Running: 1, Queued: 1} },
				10*time.Second, 5*time.Millisecond, "one run holds the slot, one waits")

			for _, tool := range []string{mcp.ToolRunCommand, mcp.ToolRunScript, mcp.ToolRunPython} {
				res := mcptest.Call(t, cs, tool, argsFor(tool, "hello"))
				require.True(t, res.IsError, tool)
				require.Contains(t, mcptest.Text(res), "busy", tool)
				require.Contains(t, mcptest.Text(res), "retry the same call after about 1 second", tool)
			}
			require.Len(t, eng.ran(), 1, "the runs turned away never reached the engine")

			close(eng.release)
			for range 2 {
				res := wait(t, answers, "an admitted run's answer")
				require.False(t, res.IsError, mcptest.Text(res))
			}
			require.Len(t, eng.ran(), 2)
		})
	}
}

// connectBy connects a client to a server over svc by door: the stdio
// server on a pair of pipes, or the Streamable HTTP handler on loopback.
func connectBy(t *testing.T, door string, svc *sandboxrun.Service) *mcpsdk.ClientSession {
	t.Helper()
	var tr mcpsdk.Transport
	switch door {
	case "stdio":
		clientIn, serverOut := io.Pipe()
		serverIn, clientOut := io.Pipe()
		served := make(chan error, 1)
		ctx, stop := context.WithCancel(context.Background())
		go func() { served <- mcp.ServeStdio(ctx, svc, serverIn, serverOut) }()
		t.Cleanup(func() {
			stop()
			_ = clientOut.Close()
			require.NoError(t, wait(t, served, "ServeStdio to return"))
			_ = serverOut.Close()
		})
		tr = &mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}
	case "http":
		srv := httptest.NewServer(mcp.HTTPHandler(svc))
		t.Cleanup(srv.Close)
		tr = &mcpsdk.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}
	}
	cs, err := newClient(nil).Connect(context.Background(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
