package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestServerListsExactlyTheDefinedTools(t *testing.T) {
	cs := session(t, service(t, &fakeEngine{}))
	listed, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	got, err := json.Marshal(listed.Tools)
	require.NoError(t, err)
	defs, err := mcp.Definitions(mcp.FormatMCP, nil)
	require.NoError(t, err)
	want, err := json.Marshal(defs.(mcp.ToolList).Tools)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "tools/list is what `sandboxrun tools --format mcp` prints")
	require.Len(t, listed.Tools, len(mcp.Tools()))
	for _, tool := range listed.Tools {
		require.NotEmpty(t, tool.Description, tool.Name)
		require.NotNil(t, tool.OutputSchema, "%s has structured output", tool.Name)
	}
}

func TestListSkillsGivesFrontmatterOnly(t *testing.T) {
	root := t.TempDir()
	copySkill(t, "hello", root)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "broken"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "broken", "SKILL.md"), []byte("---\nname: [\n---\n"), 0o644))
	cs := session(t, service(t, &fakeEngine{}, root))

	res := mcptest.Call(t, cs, mcp.ToolListSkills, nil)
	require.False(t, res.IsError, mcptest.Text(res))
	var out mcp.ListSkillsOutput
	structured(t, res, &out)
	require.Len(t, out.Skills, 1, "the broken skill is left out")
	require.Equal(t, "hello", out.Skills[0].Name)
	require.Contains(t, out.Skills[0].Description, "Echoes its JSON arguments")
	require.Contains(t, mcptest.Text(res), "- hello: Echoes")
	requireNoHostPath(t, res, root)
}

func TestActivateSkillResolvesBaseDir(t *testing.T) {
	cs := session(t, service(t, &fakeEngine{}))
	res := mcptest.Call(t, cs, mcp.ToolActivateSkill, map[string]any{"skill": "hello"})
	require.False(t, res.IsError, mcptest.Text(res))
	var out mcp.ActivateOutput
	structured(t, res, &out)
	require.Equal(t, "/skills/hello", out.BaseDir)
	require.Contains(t, out.Instructions, "/skills/hello/scripts/echo.py")
	require.NotContains(t, out.Instructions, "{baseDir}")
	require.Contains(t, out.Scripts, "scripts/echo.py")
	require.Equal(t, []string{"Bash(python3:*)", "Bash(echo:*)", "Read"}, out.AllowedTools)
	require.Contains(t, mcptest.Text(res), "python3 /skills/hello/scripts/echo.py")
	abs, err := filepath.Abs(exampleSkills)
	require.NoError(t, err)
	requireNoHostPath(t, res, abs)
}

// argsFor returns valid arguments for each skill tool, for skill.
func argsFor(tool, skillName string) map[string]any {
	switch tool {
	case mcp.ToolRunScript:
		return map[string]any{"skill": skillName, "script": "scripts/echo.py"}
	case mcp.ToolRunCommand:
		return map[string]any{"skill": skillName, "command": "echo hi"}
	case mcp.ToolRunPython:
		return map[string]any{"skill": skillName, "code": "print(1)"}
	}
	return map[string]any{"skill": skillName}
}

var skillTools = []string{mcp.ToolActivateSkill, mcp.ToolRunScript, mcp.ToolRunCommand, mcp.ToolRunPython}

func TestSkillsAreNamedNeverPathed(t *testing.T) {
	eng := &fakeEngine{}
	cs := session(t, service(t, eng))
	abs, err := filepath.Abs(filepath.Join(exampleSkills, "hello"))
	require.NoError(t, err)
	for _, ref := range []string{"nope", "../skills/hello", abs, ".", "..", "hello/", "", "hel\\lo"} {
		for _, tool := range skillTools {
			res := mcptest.Call(t, cs, tool, argsFor(tool, ref))
			require.True(t, res.IsError, "%s %q: %s", tool, ref, mcptest.Text(res))
			require.Nil(t, res.StructuredContent, "a refusal has no result to structure")
			require.Contains(t, mcptest.Text(res), "list_skills", "%s %q: the model is told where names come from", tool, ref)
			if ref != abs {
				requireNoHostPath(t, res, abs)
			}
		}
	}
	require.Empty(t, eng.ran(), "nothing reached the engine")
}

func TestRunSkillScript(t *testing.T) {
	eng := &fakeEngine{}
	cs := session(t, service(t, eng))
	res := mcptest.Call(t, cs, mcp.ToolRunScript, map[string]any{
		"skill": "hello", "script": "scripts/echo.py", "args_json": `{"name": "world"}`, "timeout_seconds": 5,
	})
	require.False(t, res.IsError, mcptest.Text(res))
	var out mcp.RunOutput
	structured(t, res, &out)
	require.Equal(t, mcp.RunOutput{
		ID: "run-1", Skill: "hello", Outcome: "success", ExitCode: 0, Success: true,
		Stdout: `{"ok": true}`, Output: map[string]any{"ok": true}, DurationMS: 12,
	}, out)
	require.Contains(t, mcptest.Text(res), "success: exit code 0")
	require.Contains(t, mcptest.Text(res), `{"ok": true}`)

	specs := eng.ran()
	require.Len(t, specs, 1)
	require.Equal(t, []string{"python3", "/skills/hello/scripts/echo.py"}, specs[0].Argv)
	require.JSONEq(t, `{"name": "world"}`, string(specs[0].Stdin))
	require.Equal(t, 5*time.Second, specs[0].Limits.Timeout, "the caller chose a shorter limit than the skill's 10s")
	require.Nil(t, specs[0].Stdout, "no progress asked for, no live writer")

	// The shape an OpenAI strict-mode model writes: every field, null for
	// the ones not given.
	res = mcptest.Call(t, cs, mcp.ToolRunScript, map[string]any{
		"skill": "hello", "script": "/skills/hello/scripts/echo.py", "args_json": nil, "timeout_seconds": nil,
	})
	require.False(t, res.IsError, mcptest.Text(res))
	specs = eng.ran()
	require.Len(t, specs, 2)
	require.Equal(t, 10*time.Second, specs[1].Limits.Timeout, "the skill's own limit")
	require.Equal(t, []string{"python3", "/skills/hello/scripts/echo.py"}, specs[1].Argv, "no argv given, none added")
}

func TestArgvReachesTheProgramExactly(t *testing.T) {
	eng := &fakeEngine{}
	cs := session(t, service(t, eng))
	argv := []string{"sample.csv", "--by", "price", "two words", "naïve ✓", "--flag=x", "", "$(id)"}
	tests := []struct {
		tool    string
		args    map[string]any
		program []string
	}{
		{mcp.ToolRunScript, map[string]any{"skill": "hello", "script": "scripts/echo.py", "argv": argv, "args_json": nil, "timeout_seconds": nil},
			[]string{"python3", "/skills/hello/scripts/echo.py"}},
		{mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "import sys", "argv": argv, "timeout_seconds": nil},
			[]string{"python3", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			before := len(eng.ran())
			res := mcptest.Call(t, cs, tt.tool, tt.args)
			require.False(t, res.IsError, mcptest.Text(res))
			specs := eng.ran()
			require.Len(t, specs, before+1)
			require.Equal(t, append(tt.program, argv...), specs[before].Argv)
		})
	}

	// Commands carry their own arguments: the tool has no argv.
	res := mcptest.Call(t, cs, mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": "echo hi", "argv": []string{"x"}})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "argv")
	res = mcptest.Call(t, cs, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "1", "argv": []string{"\x00"}})
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "argument 1 contains a NUL byte")
	require.Len(t, eng.ran(), len(tests), "refused argv never reaches the engine")
}

func TestFailedRunsAreToolErrorsWithTheirOutput(t *testing.T) {
	eng := &fakeEngine{run: func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		res := result(spec, 3, "partial", strings.Repeat("e", 40<<10)+"\nlast line\n")
		return res, nil
	}}
	cs := session(t, service(t, eng))
	for _, tool := range []string{mcp.ToolRunScript, mcp.ToolRunCommand} {
		res := mcptest.Call(t, cs, tool, argsFor(tool, "hello"))
		require.True(t, res.IsError, tool)
		var out mcp.RunOutput
		structured(t, res, &out)
		require.Equal(t, 3, out.ExitCode)
		require.Equal(t, "failure", out.Outcome)
		require.False(t, out.Success)
		require.Nil(t, out.Output, "partial is not JSON")
		require.Contains(t, out.Stderr, "last line", "the structured result holds all the output")
		txt := mcptest.Text(res)
		require.Contains(t, txt, "failure: exit code 3")
		require.Contains(t, txt, "--- stdout ---\npartial\n")
		require.NotContains(t, txt, "last line", "the text repeats at most 32 KiB of a stream")
		require.Contains(t, txt, "more bytes of stderr in the structured result")
	}

	eng.run = func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		res := result(spec, sandbox.ExitTimeout, "", "Timeout: script exceeded 1s limit and was killed\n")
		res.TimedOut = true
		return res, nil
	}
	res := mcptest.Call(t, cs, mcp.ToolRunScript, argsFor(mcp.ToolRunScript, "hello"))
	require.True(t, res.IsError)
	var out mcp.RunOutput
	structured(t, res, &out)
	require.Equal(t, "timeout", out.Outcome)
	require.True(t, out.TimedOut)
}

func TestRefusedRunsNeverReachTheEngine(t *testing.T) {
	eng := &fakeEngine{}
	cs := session(t, service(t, eng))
	abs, err := filepath.Abs(filepath.Join(exampleSkills, "hello", "scripts", "echo.py"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args map[string]any
		says string
	}{
		{"host path", map[string]any{"script": abs}, "absolute path outside the skill"},
		{"system file", map[string]any{"script": "/etc/passwd"}, "absolute path outside the skill"},
		{"dot dot", map[string]any{"script": "scripts/../../data-analysis/scripts/stats.py"}, `".." element`},
		{"outside scripts", map[string]any{"script": "/skills/hello/SKILL.md"}, "outside the skill's scripts/ folder"},
		{"missing script", map[string]any{"script": "scripts/nope.py"}, "/skills/hello/scripts/nope.py does not exist"},
		{"args not an object", map[string]any{"script": "scripts/echo.py", "args_json": "[1, 2]"}, "not an object"},
		{"args not JSON", map[string]any{"script": "scripts/echo.py", "args_json": "name=world"}, "JSON"},
		{"negative timeout", map[string]any{"script": "scripts/echo.py", "timeout_seconds": -1}, "timeout_seconds"},
		{"timeout over the ceiling", map[string]any{"script": "scripts/echo.py", "timeout_seconds": 100000}, "limit"},
		{"missing field", map[string]any{}, "script"},
		{"unknown field", map[string]any{"script": "scripts/echo.py", "image": "alpine"}, "image"},
		{"argv with a NUL byte", map[string]any{"script": "scripts/echo.py", "argv": []string{"ok", "a\x00b"}}, "argument 2 contains a NUL byte"},
		{"argv not strings", map[string]any{"script": "scripts/echo.py", "argv": []any{1}}, "argv"},
		{"argv not a list", map[string]any{"script": "scripts/echo.py", "argv": "a b"}, "argv"},
		{"argv too many", map[string]any{"script": "scripts/echo.py", "argv": make([]string, 4097)}, "4097 arguments, over the limit of 4096"},
		{"wrong type", map[string]any{"script": "scripts/echo.py", "args_json": map[string]any{"a": 1}}, "args_json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["skill"] = "hello"
			res := mcptest.Call(t, cs, mcp.ToolRunScript, tc.args)
			require.True(t, res.IsError, mcptest.Text(res))
			require.Nil(t, res.StructuredContent)
			require.Contains(t, mcptest.Text(res), tc.says)
			if !strings.Contains(fmt.Sprint(tc.args), abs) {
				requireNoHostPath(t, res, filepath.Dir(filepath.Dir(abs)))
			}
		})
	}
	require.Empty(t, eng.ran())
}

func TestDeniedCommandsSayWhatWouldAllowThem(t *testing.T) {
	eng := &fakeEngine{}
	cs := session(t, service(t, eng))
	for _, tc := range []struct {
		command, part, suggest string
	}{
		{"python3 /skills/hello/scripts/echo.py | jq .", `"jq ."`, "add Bash(jq:*) to the skill's allowed-tools"},
		{"curl http://example.invalid", `"curl http://example.invalid"`, "add Bash(curl:*)"},
		{"echo $(id)", `"$(id)"`, ""},
		{"eval ls", `"eval ls"`, ""},
	} {
		res := mcptest.Call(t, cs, mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": tc.command})
		require.True(t, res.IsError, tc.command)
		require.Nil(t, res.StructuredContent)
		txt := mcptest.Text(res)
		require.Contains(t, txt, "command denied at "+tc.part, tc.command)
		require.Contains(t, txt, tc.suggest, tc.command)
		require.Contains(t, txt, "The skill's allowed-tools: Bash(python3:*), Bash(echo:*), Read", tc.command)
	}
	require.Empty(t, eng.ran())

	res := mcptest.Call(t, cs, mcp.ToolRunCommand, map[string]any{"skill": "hello", "command": "echo hi && python3 {baseDir}/scripts/echo.py"})
	require.False(t, res.IsError, mcptest.Text(res))
	specs := eng.ran()
	require.Len(t, specs, 1)
	require.Equal(t, "bash", specs[0].Runtime)
	require.Contains(t, specs[0].Argv[len(specs[0].Argv)-1], "python3 /skills/hello/scripts/echo.py", "{baseDir} resolved before the check")
}

func TestRunPythonAnswersInTheAgentShape(t *testing.T) {
	eng := &fakeEngine{}
	cs := session(t, service(t, eng))
	res := mcptest.Call(t, cs, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "print(2 + 2)"})
	require.False(t, res.IsError, mcptest.Text(res))
	var out sandboxrun.PythonResult
	structured(t, res, &out)
	require.Equal(t, sandboxrun.PythonResult{SkillName: "hello", Stdout: `{"ok": true}`}, out)
	specs := eng.ran()
	require.Equal(t, []string{"python3", "-"}, specs[0].Argv)
	require.Equal(t, "print(2 + 2)", string(specs[0].Stdin))

	eng.run = func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		return result(spec, 1, "", "Traceback (most recent call last):\nZeroDivisionError: division by zero\n"), nil
	}
	res = mcptest.Call(t, cs, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": "1/0"})
	require.True(t, res.IsError)
	structured(t, res, &out)
	require.Equal(t, 1, out.ReturnCode)
	require.Contains(t, mcptest.Text(res), "ZeroDivisionError")

	res = mcptest.Call(t, cs, mcp.ToolRunPython, map[string]any{"skill": "hello", "code": ""})
	require.True(t, res.IsError, "empty code is refused")
	require.Nil(t, res.StructuredContent)
}

func TestEngineFailuresAreToolErrors(t *testing.T) {
	eng := &fakeEngine{run: func(context.Context, sandbox.Spec) (*sandbox.Result, error) {
		return nil, sandbox.ErrUnavailable
	}}
	cs := session(t, service(t, eng))
	res := mcptest.Call(t, cs, mcp.ToolRunScript, argsFor(mcp.ToolRunScript, "hello"))
	require.True(t, res.IsError)
	require.Contains(t, mcptest.Text(res), "could not be started")

	eng.run = func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		res := result(spec, -9, "half", "")
		res.Signal = "SIGKILL"
		return res, errors.New("container killed from outside")
	}
	res = mcptest.Call(t, cs, mcp.ToolRunScript, argsFor(mcp.ToolRunScript, "hello"))
	require.True(t, res.IsError)
	var out mcp.RunOutput
	structured(t, res, &out)
	require.Equal(t, "error", out.Outcome, "a sandbox that failed mid-run still reports what it saw")
	require.Equal(t, "half", out.Stdout)
}

// requireNoHostPath fails when a result mentions a host folder.
func requireNoHostPath(t *testing.T, res any, dir string) {
	t.Helper()
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.NotContains(t, string(b), dir, "a model-facing answer names no host folder")
}

// copySkill copies one of the example skills into root.
func copySkill(t *testing.T, name, root string) {
	t.Helper()
	require.NoError(t, os.CopyFS(filepath.Join(root, name), os.DirFS(filepath.Join(exampleSkills, name))))
}
