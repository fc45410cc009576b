package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/policy"
)

// A skill with disable-model-invocation is in neither list_skills nor the
// resources a model browses, and still activates when named.
func TestModelDisabledSkillIsNotListed(t *testing.T) {
	root := t.TempDir()
	for name, extra := range map[string]string{
		"shown":  "when_to_use: When a test asks.\n",
		"hidden": "disable-model-invocation: true\n",
	} {
		dir := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		md := "---\nname: " + name + "\ndescription: A test skill named " + name + ".\n" + extra + "---\nBody.\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644))
	}
	cs := session(t, service(t, &fakeEngine{}, root))

	res := mcptest.Call(t, cs, "list_skills", map[string]any{})
	require.False(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "shown")
	require.Contains(t, mcptest.Text(res), "When to use: When a test asks.")
	require.NotContains(t, mcptest.Text(res), "hidden")

	list, err := cs.ListResources(context.Background(), nil)
	require.NoError(t, err)
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	require.Contains(t, uris, "skill://shown/SKILL.md")
	require.NotContains(t, uris, "skill://hidden/SKILL.md")

	res = mcptest.Call(t, cs, "activate_skill", map[string]any{"skill": "hidden"})
	require.False(t, res.IsError, mcptest.Text(res))
}

// With uploads on, an MCP connection (which owns no uploads) is told of a
// missing skill as before.
func TestMissingSkillWithUploadsOn(t *testing.T) {
	pol, err := policy.ParsePolicy("p.yaml", []byte("skill_uploads:\n  allow: tokens\n  store: "+t.TempDir()+"\n"))
	require.NoError(t, err)
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{exampleSkills}, Runner: &fakeEngine{}, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	cs := session(t, svc)
	res := mcptest.Call(t, cs, "run_skill_script", map[string]any{"skill": "nope", "script": "scripts/x.py"})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "list_skills")
	require.NotContains(t, mcptest.Text(res), "token digest")
}
