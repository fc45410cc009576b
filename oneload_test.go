package sandboxrun_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/server"
)

// Every request a front end serves loads its skill once: to decide, to run,
// and to answer in sandbox terms (the Execution carries the skill it
// loaded). Refusals included, before and after the skill loaded.
func TestOneSkillLoadPerRequest(t *testing.T) {
	svc, eng := newService(t, sandboxrun.Config{})
	loads := sandboxrun.CountSkillLoads(svc)
	once := func(t *testing.T, what string, do func()) {
		t.Helper()
		before := loads()
		do()
		require.Equal(t, int64(1), loads()-before, "skill loads for %s", what)
	}

	t.Run("HTTP", func(t *testing.T) {
		srv, err := server.New(server.Options{Service: svc})
		require.NoError(t, err)
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		for _, tc := range []struct {
			method, path, body string
			status             int
		}{
			{"POST", "/v1/skills/hello/run", `{"script":"scripts/echo.py"}`, http.StatusOK},
			{"POST", "/v1/skills/hello/python", `{"code":"print(1)"}`, http.StatusOK},
			{"POST", "/v1/skills/hello/exec", `{"command":"curl http://example.invalid"}`, http.StatusForbidden},
			{"POST", "/v1/skills/hello/run", `{"script":"scripts/missing.py"}`, http.StatusForbidden},
			{"POST", "/v1/skills/no-such-skill/run", `{"script":"scripts/echo.py"}`, http.StatusNotFound},
			{"POST", "/v1/skills/hello/explain", `{"script":"scripts/echo.py"}`, http.StatusOK},
			{"POST", "/v1/skills/hello/explain", `{"command":"curl http://example.invalid"}`, http.StatusForbidden},
			{"GET", "/v1/skills/hello", "", http.StatusOK},
			{"GET", "/v1/skills/no-such-skill", "", http.StatusNotFound},
		} {
			once(t, tc.method+" "+tc.path+" "+tc.body, func() {
				req, err := http.NewRequest(tc.method, ts.URL+tc.path, bytes.NewBufferString(tc.body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				resp, err := ts.Client().Do(req)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.Equal(t, tc.status, resp.StatusCode, "%s %s %s", tc.method, tc.path, tc.body)
			})
		}
	})

	t.Run("MCP", func(t *testing.T) {
		ctx := context.Background()
		ct, st := mcpsdk.NewInMemoryTransports()
		ss, err := mcp.NewServer(svc).Connect(ctx, st, nil)
		require.NoError(t, err)
		cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = cs.Close()
			_ = ss.Wait()
		})
		for _, tc := range []struct {
			tool    string
			args    map[string]any
			isError bool
		}{
			{mcp.ToolRunScript, map[string]any{"skill": "hello", "script": "scripts/echo.py"}, false},
			{mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(1)"}, false},
			{mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": "curl http://example.invalid"}, true},
			{mcp.ToolRunScript, map[string]any{"skill": "hello", "script": "scripts/missing.py"}, true},
			{mcp.ToolRunScript, map[string]any{"skill": "no-such-skill", "script": "scripts/echo.py"}, true},
			{mcp.ToolActivateSkill, map[string]any{"skill": "hello"}, false},
			{mcp.ToolExplain, map[string]any{"skill": "hello", "script": "scripts/echo.py"}, false},
			{mcp.ToolExplain, map[string]any{"skill": "hello", "command": "curl http://example.invalid"}, true},
			{mcp.ToolActivateSkill, map[string]any{"skill": "no-such-skill"}, true},
		} {
			once(t, tc.tool, func() {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				res, err := cs.CallTool(cctx, &mcpsdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
				require.NoError(t, err)
				require.Equal(t, tc.isError, res.IsError, "%s %v", tc.tool, tc.args)
			})
		}
	})
	require.Len(t, eng.specs, 4, "the runs that were allowed ran")
}
