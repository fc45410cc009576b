package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/mcp"
)

func TestToolsPrintsEachFormat(t *testing.T) {
	isolateEnv(t)
	for _, f := range mcp.Formats {
		r := cli(t, "", "tools", "--format", string(f))
		r.requireCode(t, 0)
		want, err := mcp.Definitions(f, nil)
		require.NoError(t, err)
		b, err := json.Marshal(want)
		require.NoError(t, err)
		require.JSONEq(t, string(b), r.stdout, "the CLI prints Definitions(%s) as it is", f)
	}
	r := cli(t, "", "tools")
	r.requireCode(t, 0)
	require.Contains(t, r.stdout, `"strict": true`, "openai is the default")
}

func TestToolsLimitsSkillNamesToThoseGiven(t *testing.T) {
	isolateEnv(t)
	r := cli(t, "", "tools", "--format", "anthropic", "--skills", exampleSkills)
	r.requireCode(t, 0)
	var tools []struct {
		Name        string `json:"name"`
		InputSchema struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"input_schema"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tools))
	limited := 0
	for _, tool := range tools {
		if p, ok := tool.InputSchema.Properties["skill"]; ok {
			require.Equal(t, []string{"csv-report", "data-analysis", "hello"}, p.Enum, tool.Name)
			limited++
		}
	}
	require.Equal(t, 4, limited, "every tool that takes a skill")

	t.Setenv("SANDBOXRUN_SKILLS", exampleSkills)
	r = cli(t, "", "tools", "--format", "openai")
	r.requireCode(t, 0)
	require.Contains(t, r.stdout, `"enum"`, "$SANDBOXRUN_SKILLS counts as --skills")
}

func TestToolsRefusesBadInput(t *testing.T) {
	isolateEnv(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"tools", "--format", "gemini"}, "use one of [openai anthropic mcp]"},
		{[]string{"tools", "--skills", t.TempDir()}, "no skills in"},
		{[]string{"tools", "extra"}, "takes no arguments"},
	} {
		r := cli(t, "", tc.args...)
		r.requireCode(t, exitRefused)
		require.Contains(t, r.stderr, tc.says)
		require.Empty(t, r.stdout)
	}
}
