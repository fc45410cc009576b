package server_test

import (
	"context"
	"net/http/httptest"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// TestMCPRunsCountUnderTheTokensLabel: a run over /mcp counts under the
// label of the token that opened the connection, as an HTTP run does, and
// one past its quota is a tool error naming the quota, running nothing.
func TestMCPRunsCountUnderTheTokensLabel(t *testing.T) {
	pol, err := policy.ParsePolicy("p.yaml", []byte("tenants:\n  labels:\n    team-a: {quotas: [{window: 1h, runs: 1}]}\n"))
	require.NoError(t, err)
	eng := &cpuEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewLabelledTokens(map[string]string{"team-a": tokenA}), MCP: mcp.HTTPHandler(svc)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	cs := mcpAs(t, ts.URL, tokenA)
	args := map[string]any{"skill": "hello", "code": "print(1)"}
	res := mcptest.Call(t, cs, mcp.ToolRunPython, args)
	require.False(t, res.IsError, mcptest.Text(res))
	res, err = cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: mcp.ToolRunPython, Arguments: args})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "quota: quota runs per 1h0m0s")
	require.Contains(t, mcptest.Text(res), "retry_after_seconds")
	eng.mu.Lock()
	runs := eng.runs
	eng.mu.Unlock()
	require.Equal(t, 1, runs, "the refused call never reached the engine")

	u, err := svc.For(sandboxrun.Caller{Label: "team-a", Remote: true}).Usage()
	require.NoError(t, err)
	require.Equal(t, int64(1), u.Total.Runs)
	require.Equal(t, int64(250), u.Total.CPUTimeMS)
}
