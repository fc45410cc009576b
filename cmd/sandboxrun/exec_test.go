package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// specSkills builds a skills root with the Agent Skills spec's example
// allowed-tools, a python skill, and a skill without allowed-tools.
func specSkills(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeSkill(t, root, "git-helper", frontmatter("git-helper", "allowed-tools: Bash(git status:*) Bash(git diff:*) Read"), "body\n", nil)
	writeSkill(t, root, "py", frontmatter("py", "allowed-tools: Bash(python:*)"), "body\n", nil)
	writeSkill(t, root, "no-tools", frontmatter("no-tools"), "body\n", nil)
	return root
}

func TestExecDryRunDecisions(t *testing.T) {
	isolateEnv(t)
	root := specSkills(t)
	tests := []struct {
		skills  string
		skill   string
		command string
		allowed bool
		// runs is the command as resolved (skill-relative scripts named
		// by their sandbox path); empty means command itself.
		runs string
	}{
		{exampleSkills, "hello", "python3 scripts/echo.py", true, "python3 /skills/hello/scripts/echo.py"},
		{exampleSkills, "hello", "python {baseDir}/scripts/echo.py -v", true, "python /skills/hello/scripts/echo.py -v"},
		{exampleSkills, "hello", "echo hi | python3 /skills/hello/scripts/echo.py", true, ""},
		{exampleSkills, "hello", "echo '{\"a\": 1}' > /tmp/a.json && python3 scripts/echo.py < /tmp/a.json", true,
			"echo '{\"a\": 1}' > /tmp/a.json && python3 /skills/hello/scripts/echo.py < /tmp/a.json"},
		{exampleSkills, "hello", "python3 scripts/missing.py", true, ""},
		{exampleSkills, "hello", "node scripts/echo.js", false, "node /skills/hello/scripts/echo.js"},
		{exampleSkills, "hello", "rm -rf /", false, ""},
		{exampleSkills, "hello", "echo hi; curl http://example.com", false, ""},

		{root, "git-helper", "git status --short", true, ""},
		{root, "git-helper", "git status", true, ""},
		{root, "git-helper", "git diff HEAD~1 -- README.md", true, ""},
		{root, "git-helper", "git status && git diff", true, ""},
		{root, "git-helper", "git commit -m x", false, ""},
		{root, "git-helper", "git statusx", false, ""},
		{root, "git-helper", "git", false, ""},
		{root, "git-helper", "git status; rm -rf /", false, ""},
		{root, "git-helper", "git status | sh", false, ""},
		{root, "git-helper", "$(whoami)", false, ""},
		{root, "git-helper", "git status $(whoami)", false, ""},
		{root, "git-helper", "git status `whoami`", false, ""},
		{root, "git-helper", "eval git status", false, ""},
		{root, "git-helper", "cat <(git status)", false, ""},

		{root, "py", "python3 x.py", true, ""},
		{root, "py", "python x.py", true, ""},
		{root, "py", "python3 -c 'print(1)' | python x.py", true, ""},
		{root, "py", "pythonx x.py", false, ""},
		{root, "py", "bash -c 'python x.py'", false, ""},

		{root, "no-tools", "echo hi", false, ""},
		{root, "no-tools", "true", false, ""},
		{root, "no-tools", "git status", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.skill+"/"+tt.command, func(t *testing.T) {
			runs := tt.command
			if tt.runs != "" {
				runs = tt.runs
			}
			r := cli(t, "", "exec", "--dry-run", "--skills", tt.skills, tt.skill, "--", tt.command)
			if tt.allowed {
				r.requireCode(t, exitOK)
				require.Equal(t, "allowed: "+runs, strings.SplitN(r.stdout, "\n", 2)[0])
				require.Regexp(t, `\nhost: (checked|could not check|not checked).*\n$`, r.stdout)
			} else {
				r.requireCode(t, exitRefused)
				require.Regexp(t, `^denied: .+`, r.stdout)
			}
			require.Empty(t, r.stderr, "a decision is output, not a diagnostic")

			j := cli(t, "", "exec", "--dry-run", "--json", "--skills", tt.skills, tt.skill, "--", tt.command)
			var d decision
			require.NoError(t, json.Unmarshal([]byte(j.stdout), &d), j.stdout)
			require.Equal(t, tt.allowed, d.Allowed)
			require.Equal(t, runs, d.Command)
			require.Equal(t, tt.skill, d.Skill)
			if tt.allowed {
				j.requireCode(t, exitOK)
				require.Empty(t, d.Reason)
			} else {
				j.requireCode(t, exitRefused)
				require.NotEmpty(t, d.Reason)
			}
		})
	}
}

func TestExecDryRunJSONFields(t *testing.T) {
	isolateEnv(t)
	root := specSkills(t)
	tests := []struct {
		name    string
		skill   string
		command string
		part    string
		suggest string
	}{
		{"unlisted subcommand", "git-helper", "git commit -m x", "git commit -m x", "Bash(git commit:*)"},
		{"second command of a list", "git-helper", "git status; rm -rf /", "rm -rf /", "Bash(rm:*)"},
		{"command substitution", "git-helper", "$(whoami)", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", "exec", "--dry-run", "--json", "--skills", root, tt.skill, "--", tt.command)
			r.requireCode(t, exitRefused)
			var raw map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw), r.stdout)
			require.Equal(t, false, raw["allowed"])
			require.Equal(t, tt.skill, raw["skill"])
			require.Equal(t, tt.command, raw["command"])
			require.NotEmpty(t, raw["reason"])
			if tt.part != "" {
				require.Equal(t, tt.part, raw["part"])
			}
			if tt.suggest != "" {
				require.Equal(t, tt.suggest, raw["suggest"])
			} else {
				require.NotContains(t, raw, "suggest", "no allowed-tools entry can allow a substitution")
			}
		})
	}

	t.Run("allowed omits the refusal fields", func(t *testing.T) {
		r := cli(t, "", "exec", "--dry-run", "--json", "--skills", root, "git-helper", "--", "git status")
		r.requireCode(t, exitOK)
		var raw map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw), r.stdout)
		require.Contains(t, raw["host"], "checked", "whether the engine's host was asked")
		delete(raw, "host")
		require.Equal(t, map[string]any{"allowed": true, "skill": "git-helper", "command": "git status"}, raw)
	})
}

func TestExecUsageErrors(t *testing.T) {
	isolateEnv(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"two command arguments", []string{"exec", "--dry-run", "--skills", exampleSkills, "hello", "--", "python3", "x.py"}, "one quoted COMMAND"},
		{"no command", []string{"exec", "--dry-run", "--skills", exampleSkills, "hello"}, "one quoted COMMAND"},
		{"nothing", []string{"exec"}, "one quoted COMMAND"},
		{"unknown skill", []string{"exec", "--dry-run", "--skills", exampleSkills, "nope", "--", "echo"}, `"nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitRefused)
			require.Contains(t, r.stderr, tt.want)
			require.Empty(t, r.stdout)
		})
	}
}

// --dry-run explains the run its flags ask for, from the plan that run
// would execute: a command allowed by allowed-tools is still denied when
// the flags' limits or environment would refuse the run.
func TestExecDryRunJudgesTheFlags(t *testing.T) {
	for _, tt := range []struct {
		name    string
		flags   []string
		allowed bool
		reason  string
	}{
		{"no flags", nil, true, ""},
		{"a timeout within bounds", []string{"--timeout", "5"}, true, ""},
		{"a timeout beyond bounds", []string{"--timeout", "9999"}, false, "timeout"},
		{"a reserved variable", []string{"--env", "LD_PRELOAD=/x.so"}, false, "LD_PRELOAD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"exec", "--dry-run", "--json", "--skills", exampleSkills}, tt.flags...)
			r := cli(t, "", append(args, "hello", "--", "echo hi")...)
			var d decision
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.stdout)
			require.Equal(t, tt.allowed, d.Allowed)
			require.Equal(t, "echo hi", d.Command)
			if tt.allowed {
				r.requireCode(t, exitOK)
				return
			}
			r.requireCode(t, exitRefused)
			require.Contains(t, d.Reason, tt.reason)
		})
	}
}
