package mcp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
)

func TestExplainRunsNothing(t *testing.T) {
	eng := &fakeEngine{}
	svc := sessionService(t, eng)
	srv := mcp.NewServer(svc)
	cs := connect(t, srv, nil)
	skills, err := filepath.Abs(exampleSkills)
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		args   map[string]any
		action string
		argv   []string
	}{
		{"script", map[string]any{"script": "scripts/echo.py", "argv": []string{"a"}, "timeout_seconds": 4}, "script",
			[]string{"python3", "/skills/hello/scripts/echo.py", "a"}},
		{"command", map[string]any{"command": "python3 scripts/echo.py", "script": nil, "code": nil}, "command", nil},
		{"python", map[string]any{"code": "print(1)"}, "python", []string{"python3", "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["skill"] = "hello"
			res := mcptest.Call(t, cs, mcp.ToolExplain, tc.args)
			require.False(t, res.IsError, mcptest.Text(res))
			var e sandboxrun.Explanation
			structured(t, res, &e)
			require.Equal(t, tc.action, e.Action)
			if tc.argv != nil {
				require.Equal(t, tc.argv, e.Argv[:len(tc.argv)])
			}
			require.False(t, e.Limits.Network)
			require.NotEmpty(t, e.Image)
			// The connection's own session is the workspace, named as
			// the sandbox mounts it.
			require.Equal(t, "/workspace", e.Workspace)
			require.NotEmpty(t, e.Session)
			require.Contains(t, mcptest.Text(res), "allowed: "+tc.action)
			requireNoHostPath(t, res, skills)
			requireNoHostPath(t, res, os.TempDir()) // where the sessions are
		})
	}
	res := mcptest.Call(t, cs, mcp.ToolExplain, map[string]any{"skill": "hello", "script": "scripts/echo.py", "timeout_seconds": 4})
	var e sandboxrun.Explanation
	structured(t, res, &e)
	require.InDelta(t, 4.0, e.Limits.TimeoutSec, 0.001)

	for _, tc := range []struct {
		name string
		args map[string]any
		says string
	}{
		{"denied command", map[string]any{"command": "curl http://x"}, "Bash(curl:*)"},
		{"over the ceiling", map[string]any{"code": "1", "timeout_seconds": 100000}, "limit"},
		{"host path", map[string]any{"script": filepath.Join(skills, "hello", "scripts", "echo.py")}, "absolute path outside the skill"},
		{"nothing to explain", map[string]any{}, "exactly one of"},
		{"two things", map[string]any{"script": "scripts/echo.py", "code": "1"}, "exactly one of"},
		{"argv with a command", map[string]any{"command": "echo", "argv": []string{"x"}}, "argv"},
		{"arguments the run would refuse", map[string]any{"script": "scripts/echo.py", "args_json": "[1, 2]"}, "not an object"},
		{"arguments with a command", map[string]any{"command": "echo", "args_json": "{}"}, "script only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["skill"] = "hello"
			res := mcptest.Call(t, cs, mcp.ToolExplain, tc.args)
			require.True(t, res.IsError, mcptest.Text(res))
			require.Contains(t, mcptest.Text(res), tc.says)
		})
	}
	res = mcptest.Call(t, cs, mcp.ToolExplain, map[string]any{"skill": "nope", "code": "1"})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "list_skills")
	require.Empty(t, eng.ran(), "explain starts nothing")
}
