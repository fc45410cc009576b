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
	require.Equal(t, 5, limited, "every tool that takes a skill")

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

// TestToolsDescribeArgv: the run tools take argv as an array of strings in
// every format (nullable, so strict mode can require it); a command carries
// its own arguments.
func TestToolsDescribeArgv(t *testing.T) {
	isolateEnv(t)
	schemaPath := map[mcp.Format]func(tool map[string]any) (string, map[string]any){
		mcp.FormatOpenAI: func(tool map[string]any) (string, map[string]any) {
			f := tool["function"].(map[string]any)
			return f["name"].(string), f["parameters"].(map[string]any)
		},
		mcp.FormatAnthropic: func(tool map[string]any) (string, map[string]any) {
			return tool["name"].(string), tool["input_schema"].(map[string]any)
		},
		mcp.FormatMCP: func(tool map[string]any) (string, map[string]any) {
			return tool["name"].(string), tool["inputSchema"].(map[string]any)
		},
	}
	for _, f := range mcp.Formats {
		t.Run(string(f), func(t *testing.T) {
			r := cli(t, "", "tools", "--format", string(f))
			r.requireCode(t, 0)
			var tools []map[string]any
			if f == mcp.FormatMCP {
				var list struct {
					Tools []map[string]any `json:"tools"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
				tools = list.Tools
			} else {
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &tools))
			}
			seen := map[string]bool{}
			for _, tool := range tools {
				name, schema := schemaPath[f](tool)
				props := schema["properties"].(map[string]any)
				argv, ok := props["argv"].(map[string]any)
				switch name {
				case mcp.ToolRunScript, mcp.ToolRunPython, mcp.ToolExplain:
					require.True(t, ok, "%s takes argv", name)
					require.ElementsMatch(t, []any{"null", "array"}, argv["type"], name)
					require.Equal(t, map[string]any{"type": "string"}, argv["items"], name)
					require.NotEmpty(t, argv["description"], name)
					if f == mcp.FormatOpenAI {
						require.Contains(t, schema["required"], "argv", "strict mode requires every property")
					}
					seen[name] = true
				default:
					require.False(t, ok, "%s takes no argv", name)
				}
			}
			require.Len(t, seen, 3)
		})
	}
}
