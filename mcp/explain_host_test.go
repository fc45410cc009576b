package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// hostEngine is a backend on a two-CPU host: it checks a Spec as a
// backend does before it starts anything, in Run and for an explanation.
type hostEngine struct{ *fakeEngine }

func (h hostEngine) CheckSpec(_ context.Context, spec sandbox.Spec) error {
	return sandbox.CheckHost(&spec, sandbox.HostCapacity{CPUs: 2})
}

func (h hostEngine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	if err := h.CheckSpec(ctx, spec); err != nil {
		return nil, err
	}
	return h.fakeEngine.Run(ctx, spec)
}

// explain_run answers what the run tool answers when the engine's host
// cannot honour the request (four CPUs on two), and says the host was
// checked when it can.
func TestExplainAsksTheHost(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "greedy")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"),
		[]byte("---\nname: greedy\ndescription: Asks for four CPUs.\nmax_cpus: 4\n---\nbody\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "g.py"), []byte("print(1)\n"), 0o644))
	pol, err := policy.ParsePolicy("p.yaml", []byte("limits:\n  cpus: {max: 8}\n"))
	require.NoError(t, err)
	eng := &fakeEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills, root}, Runner: hostEngine{eng}, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	cs := session(t, svc)

	res := mcptest.Call(t, cs, mcp.ToolExplain, map[string]any{"skill": "hello", "script": "scripts/echo.py"})
	require.False(t, res.IsError, mcptest.Text(res))
	var e sandboxrun.Explanation
	structured(t, res, &e)
	require.True(t, e.Host.Checked)
	require.Contains(t, mcptest.Text(res), "host: checked against the engine's host")

	explained := mcptest.Call(t, cs, mcp.ToolExplain, map[string]any{"skill": "greedy", "script": "scripts/g.py"})
	ran := mcptest.Call(t, cs, mcp.ToolRunScript, map[string]any{"skill": "greedy", "script": "scripts/g.py"})
	require.True(t, explained.IsError, mcptest.Text(explained))
	require.True(t, ran.IsError, mcptest.Text(ran))
	require.Contains(t, mcptest.Text(explained), "beyond what the engine's host offers: cpus 4 (max_cpus / --cpus) is above the engine host's 2 CPUs")
	require.Equal(t, mcptest.Text(ran), mcptest.Text(explained), "explain_run refuses as the run does")
	require.Len(t, eng.ran(), 0, "nothing ran")
}
