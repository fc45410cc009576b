package server_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/mcptest"
)

// A remote caller naming a skill that does not exist is told how to list
// the skills, over HTTP and over MCP, and never the CLI's fix (--skills, a
// path to a folder), which names the host: that is the operator's.
func TestUnknownSkillHintIsTheCallers(t *testing.T) {
	url, _ := startMCP(t)
	skills, err := filepath.Abs("../skills")
	require.NoError(t, err)
	cli := []string{"--skills", "SANDBOXRUN_SKILLS", "path to the skill folder", skills}
	const ref = "zzz-no-such-skill"

	for _, tt := range []struct{ name, method, path, body string }{
		{"run", "POST", "/v1/skills/" + ref + "/run", `{"script": "scripts/echo.py"}`},
		{"explain", "POST", "/v1/skills/" + ref + "/explain", `{"script": "scripts/echo.py"}`},
		{"activate", "GET", "/v1/skills/" + ref, ""},
	} {
		t.Run("HTTP "+tt.name, func(t *testing.T) {
			r := call(t, tt.method, url+tt.path, tt.body, as(tokenA)...)
			require.Equal(t, http.StatusNotFound, r.status, string(r.body))
			require.Contains(t, string(r.body), "GET /v1/skills", "the caller is told how to list the skills")
			for _, s := range cli {
				require.NotContains(t, string(r.body), s)
			}
		})
	}

	cs := mcpAs(t, url, tokenA)
	for _, tt := range []struct {
		tool string
		args map[string]any
	}{
		{"run_skill_script", map[string]any{"skill": ref, "script": "scripts/echo.py"}},
		{"activate_skill", map[string]any{"skill": ref}},
	} {
		t.Run("MCP "+tt.tool, func(t *testing.T) {
			res := mcptest.Call(t, cs, tt.tool, tt.args)
			require.True(t, res.IsError)
			text := mcptest.Text(res)
			require.Contains(t, text, "list_skills", "the model is told how to list the skills")
			for _, s := range cli {
				require.NotContains(t, text, s)
			}
		})
	}
}
