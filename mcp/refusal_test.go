package mcp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
)

// A refused run tells the model the policy's words without the operator's
// folders: the policy file, the skills' folder and the sessions' root stay
// on the host.
func TestRefusedRunNamesNoHostPath(t *testing.T) {
	dir := t.TempDir()
	polPath := filepath.Join(dir, "operator-policy.yaml")
	require.NoError(t, os.WriteFile(polPath, []byte("limits:\n  timeout: {default: 5s, max: 20s}\n"), 0o600))
	pol, err := policy.LoadPolicy(polPath)
	require.NoError(t, err)
	sessions := filepath.Join(dir, "sessions")
	eng := &fakeEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: eng,
		SessionsRoot: sessions, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	cs := connect(t, mcp.NewServer(svc), nil)
	skills, err := filepath.Abs(exampleSkills)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		says       string
	}{
		{"script over the ceiling", mcp.ToolRunScript, map[string]any{"script": "scripts/echo.py", "timeout_seconds": 100}, "operator policy line 2"},
		{"command over the ceiling", mcp.ToolRunCommand, map[string]any{"command": "python3 scripts/echo.py", "timeout_seconds": 100}, "operator policy line 2"},
		{"python over the ceiling", mcp.ToolRunPython, map[string]any{"code": "print(1)", "timeout_seconds": 100}, "operator policy line 2"},
		{"explain over the ceiling", mcp.ToolExplain, map[string]any{"code": "print(1)", "timeout_seconds": 100}, "operator policy line 2"},
		{"denied command", mcp.ToolRunCommand, map[string]any{"command": "curl http://x"}, "Bash(curl:*)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["skill"] = "hello"
			res := mcptest.Call(t, cs, tc.tool, tc.args)
			require.True(t, res.IsError, mcptest.Text(res))
			require.Contains(t, mcptest.Text(res), tc.says)
			for _, host := range []string{dir, polPath, sessions, skills, exampleSkills} {
				requireNoHostPath(t, res, host)
			}
		})
	}
	require.Empty(t, eng.ran(), "a refused run starts nothing")
}
