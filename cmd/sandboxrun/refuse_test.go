package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
)

// TestRefusedBeforeDocker checks requests that policy or the CLI must refuse
// before any container exists. isolateEnv points DOCKER_HOST at a socket that
// does not exist, so a request that slipped through to Docker would end with
// exit status 3, not 2.
const strictPolicy = "testdata/strict-policy.yaml"

func TestRefusedBeforeDocker(t *testing.T) {
	isolateEnv(t)
	tmp := t.TempDir()
	argsFile := filepath.Join(tmp, "args.json")
	require.NoError(t, os.WriteFile(argsFile, []byte(`{"a": 1}`), 0o600))
	arrayFile := filepath.Join(tmp, "array.json")
	require.NoError(t, os.WriteFile(arrayFile, []byte(`[1, 2]`), 0o600))
	codeFile := filepath.Join(tmp, "code.py")
	require.NoError(t, os.WriteFile(codeFile, []byte("print(1)\n"), 0o600))
	notDir := filepath.Join(tmp, "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	missingDir := filepath.Join(tmp, "missing")
	oversized := strings.Repeat(" ", sandboxrun.MaxCodeBytes) + "print(1)"

	run := []string{"run", "--skills", exampleSkills, "--workspace", tmp}
	script := append(append([]string{}, run...), "hello", "scripts/echo.py")
	exec := []string{"exec", "--skills", exampleSkills, "--workspace", tmp, "hello", "--"}
	python := []string{"python", "--skills", exampleSkills, "--workspace", tmp, "hello"}
	with := func(base []string, more ...string) []string { return append(append([]string{}, base...), more...) }

	tests := []struct {
		name  string
		args  []string
		stdin string
		want  []string // fragments the message must hold
	}{
		// Script paths.
		{"traversal", with(run, "hello", "../SKILL.md"), "", []string{"../SKILL.md", "outside the skill's scripts/ folder"}},
		{"deep traversal", with(run, "hello", "scripts/../../../etc/passwd"), "", []string{"outside the skill's scripts/ folder"}},
		{"absolute host path", with(run, "hello", "/etc/passwd"), "", []string{"/etc/passwd"}},
		{"missing script", with(run, "hello", "scripts/missing.py"), "", []string{"scripts/missing.py", "not found"}},
		{"unknown skill", with(run, "nope", "scripts/x.py"), "", []string{`"nope"`, "it holds: csv-report, data-analysis, hello"}},
		{"misspelt skill", with(run, "helo", "scripts/echo.py"), "", []string{`did you mean "hello"?`}},
		{"missing skills root", []string{"run", "--skills", missingDir, "hello", "scripts/echo.py"}, "", []string{"skills root", "does not exist", "--skills DIR"}},

		// Arguments.
		{"args not JSON", with(script, "--args", "{not json"), "", []string{"invalid JSON arguments", "not JSON"}},
		{"args array", with(script, "--args", "[1, 2]"), "", []string{"invalid JSON arguments", "array"}},
		{"args string", with(script, "--args", `"x"`), "", []string{"invalid JSON arguments"}},
		{"args file array", with(script, "--args-file", arrayFile), "", []string{"invalid JSON arguments", "array"}},
		{"args stdin array", with(script, "--args", "-"), "[1]", []string{"invalid JSON arguments", "array"}},
		{"args and args-file", with(script, "--args", "{}", "--args-file", argsFile), "", []string{"--args and --args-file", "pass one"}},
		{"args-file missing", with(script, "--args-file", filepath.Join(tmp, "nope.json")), "", []string{"--args-file", "nope.json"}},
		{"args over the cap", with(script, "--args", "-"), `{"a": "` + strings.Repeat("x", 10<<20) + `"}`, []string{"invalid JSON arguments"}},

		// Command-line arguments and the working directory.
		{"words after SCRIPT without --", with(script, "extra"), "", []string{"takes SKILL and SCRIPT (got 3)", "go after --"}},
		{"argument over the cap", with(script, "--", strings.Repeat("x", 128<<10)), "", []string{"invalid script arguments", "argument 1", "131071-byte limit"}},
		{"arguments over the total cap", with(script, append([]string{"--"}, slices.Repeat([]string{strings.Repeat("x", 100<<10)}, 3)...)...), "", []string{"invalid script arguments", "256 KiB"}},
		{"arguments not UTF-8", with(script, "--", "\xff"), "", []string{"invalid script arguments", "not valid UTF-8"}},
		{"unknown --cwd", with(script, "--cwd", "/tmp"), "", []string{"--cwd", `use "workspace"`}},
		{"exec with argv", []string{"exec", "--skills", exampleSkills, "hello", "--", "echo hi", "extra"}, "", []string{"exec takes SKILL and one quoted COMMAND"}},
		{"python words without --", with(python, "--code", "print(1)", "x"), "", []string{"takes one SKILL (got 2)", "go after --"}},

		// Environment.
		{"reserved PATH", with(script, "--env", "PATH=x"), "", []string{"PATH", "reserved"}},
		{"reserved SKILL_NAME", with(script, "--env", "SKILL_NAME=x"), "", []string{"SKILL_NAME", "reserved"}},
		{"reserved prefix", with(script, "--env", "SANDBOXRUN_X=1"), "", []string{"SANDBOXRUN_X"}},
		{"env without =", with(script, "--env", "FOO"), "", []string{`--env "FOO"`, "K=V"}},
		{"env empty name", with(script, "--env", "=x"), "", []string{"K=V"}},
		{"env bad name", with(script, "--env", "1X=y"), "", []string{"1X"}},

		// Limits: hello declares max_memory 128 and max_execution_time 10.
		{"memory above ceiling", with(script, "--policy", strictPolicy, "--memory", "256"), "", []string{"256MiB", "128MiB", "limits.memory.max", "strict-policy.yaml line 4"}},
		{"memory above ceiling with unit", with(script, "--policy", strictPolicy, "--memory", "1g"), "", []string{"1GiB", "limits.memory.max"}},
		{"memory unparsable", with(script, "--memory", "lots"), "", []string{`--memory "lots"`, "256m"}},
		{"memory zero", with(script, "--memory", "0"), "", []string{`--memory "0"`}},
		{"memory below minimum", with(script, "--memory", "8"), "", []string{"memory"}},
		{"timeout above ceiling", with(script, "--policy", strictPolicy, "--timeout", "11"), "", []string{"11s", "10s", "limits.timeout.max"}},
		{"timeout above absolute bound", with(script, "--timeout", "11m"), "", []string{"660 s", "1 s–600 s"}},
		{"timeout below minimum", with(script, "--timeout", "100ms"), "", []string{"timeout"}},
		{"timeout negative", with(script, "--timeout", "-1s"), "", []string{"--timeout"}},
		{"timeout unparsable", with(script, "--timeout", "soon"), "", []string{"--timeout"}},
		{"cpus above ceiling", with(script, "--policy", strictPolicy, "--cpus", "4"), "", []string{"cpus 4", "limits.cpus.max"}},
		{"policy file missing", with(script, "--policy", filepath.Join(tmp, "nope.yaml")), "", []string{"invalid policy file", "nope.yaml"}},
		{"cpus negative", with(script, "--cpus", "-1"), "", []string{"--cpus"}},

		// Workspace.
		{"workspace missing", with(script, "--workspace", missingDir), "", []string{missingDir, "--workspace"}},
		{"workspace is a file", with(script, "--workspace", notDir), "", []string{"not a directory", "--workspace"}},

		// Audit log that cannot be opened fails before Docker as well, as
		// an environment failure (checked separately below).

		// exec.
		{"exec denied", with(exec, "rm -rf /"), "", []string{"rm -rf /", "Bash(rm:*)"}},
		{"exec substitution", with(exec, "echo $(whoami)"), "", []string{"whoami"}},
		{"exec reserved env", with([]string{"exec", "--env", "HOME=/", "--skills", exampleSkills, "hello", "--"}, "echo hi"), "", []string{"HOME", "reserved"}},
		{"exec bad args", with([]string{"exec", "--args", "[]", "--skills", exampleSkills, "hello", "--"}, "echo hi"), "", []string{"invalid JSON arguments"}},

		// python.
		{"python without code", python, "", []string{"--code CODE or --file F"}},
		{"python code and file", with(python, "--code", "print(1)", "--file", codeFile), "", []string{"--code and --file are exclusive"}},
		{"python file missing", with(python, "--file", filepath.Join(tmp, "nope.py")), "", []string{"--file", "nope.py"}},
		{"python code too large", with(python, "--code", oversized), "", []string{"over the", "scripts/"}},
		{"python timeout above ceiling", with(python, "--policy", strictPolicy, "--code", "print(1)", "--timeout", "1m"), "", []string{"limits.timeout.max"}},
		{"python reserved env", with(python, "--code", "print(1)", "--env", "LANG=C"), "", []string{"LANG", "reserved"}},
		{"python no args flag", with(python, "--code", "print(1)", "--args", "{}"), "", []string{"unknown flag: --args"}},
		{"python unknown skill", []string{"python", "--skills", exampleSkills, "nope", "--code", "print(1)"}, "", []string{`"nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, tt.stdin, tt.args...)
			r.requireCode(t, exitRefused)
			require.Empty(t, r.stdout, "nothing ran, so nothing is printed on stdout")
			require.True(t, strings.HasPrefix(r.stderr, "sandboxrun: "), r.stderr)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line, one message: %q", r.stderr)
			for _, w := range tt.want {
				require.Contains(t, r.stderr, w)
			}
			require.NotContains(t, r.stderr, "docker", "a refusal never gets as far as Docker")
		})
	}
}

// TestDockerUnreachable checks that a valid request meets an unreachable
// daemon with exit status 3 and a message saying what to do.
func TestDockerUnreachable(t *testing.T) {
	isolateEnv(t)
	ws := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "--skills", exampleSkills, "--workspace", ws, "hello", "scripts/echo.py", "--args", `{"a": 1}`}},
		{"run json", []string{"run", "--json", "--skills", exampleSkills, "--workspace", ws, "hello", "scripts/echo.py"}},
		{"exec", []string{"exec", "--skills", exampleSkills, "--workspace", ws, "hello", "--", "echo hi"}},
		{"python", []string{"python", "--skills", exampleSkills, "--workspace", ws, "hello", "--code", "print(1)"}},
		{"reap", []string{"reap", "--dry-run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitEnv)
			require.Contains(t, r.stderr, "docker daemon unreachable")
			require.Contains(t, r.stderr, "DOCKER_HOST")
			require.True(t, strings.HasPrefix(r.stderr, "sandboxrun: "), r.stderr)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line, one message: %q", r.stderr)
		})
	}

	t.Run("python json answers in the agent-tool shape", func(t *testing.T) {
		r := cli(t, "", "python", "--json", "--skills", exampleSkills, "--workspace", ws, "hello", "--code", "print(1)")
		r.requireCode(t, exitEnv)
		require.Contains(t, r.stdout, `"returncode": -1`)
		require.Contains(t, r.stdout, `"skill_name": "hello"`)
		require.Contains(t, r.stdout, "docker daemon unreachable")
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line, one message: %q", r.stderr)
	})
}

func TestAuditLogUnwritable(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir() // a directory cannot be opened for appending
	tests := []struct {
		name string
		args []string
		env  string
	}{
		{"flag", []string{"run", "--audit-log", dir, "--skills", exampleSkills, "--workspace", dir, "hello", "scripts/echo.py"}, ""},
		{"environment", []string{"run", "--skills", exampleSkills, "--workspace", dir, "hello", "scripts/echo.py"}, dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SANDBOXRUN_AUDIT_LOG", tt.env)
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitEnv)
			require.Contains(t, r.stderr, "audit log")
			require.NotContains(t, r.stderr, "docker", "the audit log is checked before Docker is contacted")
		})
	}
}

// TestPythonJSONRefusals checks that python --json answers an agent tool in
// its shape even when the request is refused before anything runs.
func TestPythonJSONRefusals(t *testing.T) {
	isolateEnv(t)
	base := []string{"python", "--json", "--skills", exampleSkills}
	tests := []struct {
		name  string
		args  []string
		skill string
		want  string
	}{
		{"no code", append(append([]string{}, base...), "hello"), "hello", "--code CODE or --file F"},
		{"unknown skill", append(append([]string{}, base...), "nope", "--code", "print(1)"), "nope", `"nope"`},
		{"reserved env", append(append([]string{}, base...), "hello", "--code", "print(1)", "--env", "PATH=/x"), "hello", "PATH"},
		{"timeout above ceiling", append(append([]string{}, base...), "--policy", strictPolicy, "hello", "--code", "print(1)", "--timeout", "1m"), "hello", "limits.timeout.max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitRefused)
			var pr map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &pr), r.stdout)
			require.Equal(t, tt.skill, pr["skill_name"])
			require.Equal(t, float64(-1), pr["returncode"])
			require.Equal(t, false, pr["timed_out"])
			require.Equal(t, "", pr["stdout"])
			require.Contains(t, pr["error"], tt.want)
			require.Contains(t, r.stderr, tt.want)
		})
	}
}

// reap goes to the backend the policy selects: under a Kubernetes policy
// it asks the cluster, never the Docker engine.
func TestReapUnderAKubernetesPolicyReapsTheCluster(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+kc+"\n  namespace: sbx\n"), 0o600))
	r := cli(t, "", "--policy", pol, "reap", "--dry-run")
	r.requireCode(t, exitEnv)
	require.Contains(t, r.stderr, "kubernetes API server unreachable")
	require.NotContains(t, r.stderr, "docker")
}
