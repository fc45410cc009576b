package sandboxrun_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
	"github.com/sandboxrun/sandboxrun/skill"
)

// loadExample loads one of the repository's example skills.
func loadExample(t *testing.T, name string) *skill.Skill {
	t.Helper()
	sk, err := skill.Load(filepath.Join("skills", name))
	require.NoError(t, err)
	return sk
}

// tempSkill writes a skill named name with the extra frontmatter lines and
// the given scripts (path relative to the skill → content), and loads it.
func tempSkill(t *testing.T, name string, extra []string, scripts map[string]string) *skill.Skill {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	fm := append([]string{"name: " + name, "description: Test skill " + name + "."}, extra...)
	content := "---\n" + strings.Join(fm, "\n") + "\n---\nbody\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(content), 0o644))
	for rel, src := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(src), 0o644))
	}
	sk, err := skill.Load(dir)
	require.NoError(t, err)
	return sk
}

func TestPrepareScript(t *testing.T) {
	hello := loadExample(t, "hello")
	ws := t.TempDir()

	tests := []struct {
		name   string
		script string
		argv   []string
		rel    string
	}{
		{"python", "scripts/echo.py", []string{"python3", "/skills/hello/scripts/echo.py"}, "scripts/echo.py"},
		{"bash via baseDir", "{baseDir}/scripts/echo.sh", []string{"bash", "/skills/hello/scripts/echo.sh"}, "scripts/echo.sh"},
		{"node via sandbox path", "/skills/hello/scripts/echo.js", []string{"node", "/skills/hello/scripts/echo.js"}, "scripts/echo.js"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := sandboxrun.PrepareScript(hello, tt.script, sandboxrun.Request{
				Args:      []byte(`{ "greeting" : "hi" }`),
				Workspace: ws,
				Env:       map[string]string{"MY_VAR": "1"},
			})
			require.NoError(t, err)
			require.Equal(t, tt.argv, p.Spec.Argv)
			require.Equal(t, tt.argv[0], p.Spec.Runtime)
			require.Equal(t, tt.rel, p.Script)
			require.Equal(t, "hello", p.Spec.Skill)
			require.Equal(t, "1.0.0", p.Spec.SkillVersion)
			require.Equal(t, hello.Dir, p.Spec.SkillDir)
			require.True(t, filepath.IsAbs(p.Spec.SkillDir))
			require.Equal(t, `{"greeting":"hi"}`, string(p.Spec.Stdin), "arguments are compacted")
			require.Equal(t, p.Spec.Stdin, p.Args, "the audit sees exactly what the script gets")
			require.Equal(t, map[string]string{"MY_VAR": "1"}, p.Spec.Env)
			require.Equal(t, ws, p.Spec.Workspace)
			require.False(t, p.Spec.WorkspaceWritable, "hello's allowed-tools grant Read only")
			require.Equal(t, sandboxrun.RunnerImage(), p.Spec.Image)

			// Limits from hello's metadata: 10 s, 128 MiB; the rest default.
			require.Equal(t, 10*time.Second, p.Spec.Limits.Timeout)
			require.Equal(t, int64(128<<20), p.Spec.Limits.MemoryBytes)
			require.InDelta(t, policy.DefaultCPUs, p.Spec.Limits.CPUs, 1e-9)
			require.Equal(t, int64(policy.DefaultPids), p.Spec.Limits.Pids)
			require.False(t, p.Spec.Limits.Network)
		})
	}
}

func TestPrepareScriptRequestOptions(t *testing.T) {
	hello := loadExample(t, "hello")
	ws := t.TempDir()
	t.Chdir(ws)

	var out, errOut bytes.Buffer
	p, err := sandboxrun.PrepareScript(hello, "scripts/echo.py", sandboxrun.Request{
		Workspace: ".",
		Timeout:   5 * time.Second,
		MemoryMiB: 64,
		CPUs:      0.5,
		Image:     "example/other:1",
		Stdout:    &out,
		Stderr:    &errOut,
	})
	require.NoError(t, err)
	require.Equal(t, `{}`, string(p.Spec.Stdin), "no arguments means {}")
	require.True(t, filepath.IsAbs(p.Spec.Workspace), p.Spec.Workspace)
	gotWS, err := filepath.EvalSymlinks(p.Spec.Workspace)
	require.NoError(t, err)
	wantWS, err := filepath.EvalSymlinks(ws)
	require.NoError(t, err)
	require.Equal(t, wantWS, gotWS)
	require.Equal(t, 5*time.Second, p.Spec.Limits.Timeout)
	require.Equal(t, int64(64<<20), p.Spec.Limits.MemoryBytes)
	require.InDelta(t, 0.5, p.Spec.Limits.CPUs, 1e-9)
	require.Equal(t, "example/other:1", p.Spec.Image)
	require.Same(t, &out, p.Spec.Stdout)
	require.Same(t, &errOut, p.Spec.Stderr)
}

func TestPrepareWorkspaceWritable(t *testing.T) {
	scripts := map[string]string{"scripts/x.py": "print(1)\n"}
	ws := t.TempDir()
	tests := []struct {
		name      string
		tools     string
		workspace string
		want      bool
	}{
		{"Write granted with workspace", "allowed-tools: Read Write", ws, true},
		{"Write granted without workspace", "allowed-tools: Read Write", "", false},
		{"Read only", "allowed-tools: Read", ws, false},
		{"scoped Write is not the whole mount", "allowed-tools: Write(docs/**)", ws, false},
		{"no allowed-tools", "license: MIT", ws, false},
		{"Bash does not grant Write", "allowed-tools: Bash", ws, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk := tempSkill(t, "writer", []string{tt.tools}, scripts)
			for _, prep := range []func() (*sandboxrun.Prepared, error){
				func() (*sandboxrun.Prepared, error) {
					return sandboxrun.PrepareScript(sk, "scripts/x.py", sandboxrun.Request{Workspace: tt.workspace})
				},
				func() (*sandboxrun.Prepared, error) {
					return sandboxrun.PreparePython(sk, []byte("print(1)"), sandboxrun.Request{Workspace: tt.workspace})
				},
			} {
				p, err := prep()
				require.NoError(t, err)
				require.Equal(t, tt.want, p.Spec.WorkspaceWritable)
				require.Equal(t, tt.workspace, p.Spec.Workspace)
			}
		})
	}
}

func TestPrepareSkillLimits(t *testing.T) {
	sk := tempSkill(t, "limited", []string{
		"metadata:",
		`  max_execution_time: "120"`,
		`  max_memory: "1024"`,
		`  max_cpus: "2"`,
		`  network_access: "true"`,
	}, map[string]string{"scripts/x.py": "print(1)\n"})

	p, err := sandboxrun.PrepareScript(sk, "scripts/x.py", sandboxrun.Request{})
	require.NoError(t, err)
	require.Equal(t, 120*time.Second, p.Spec.Limits.Timeout)
	require.Equal(t, int64(1024<<20), p.Spec.Limits.MemoryBytes)
	require.InDelta(t, 2.0, p.Spec.Limits.CPUs, 1e-9)
	require.True(t, p.Spec.Limits.Network)
	require.Empty(t, p.Spec.Workspace)
}

// strictPolicy caps limits below what the example skills declare.
func strictPolicy(t *testing.T) *policy.Operator {
	t.Helper()
	pol, err := policy.ParsePolicy("strict.yaml", []byte("limits:\n  memory: {max: 128Mi}\n  timeout: {default: 5s, max: 10s}\n  cpus: {max: 1}\nworkspace:\n  roots: [/srv/none]\n"))
	require.NoError(t, err)
	return pol
}

func TestPrepareScriptRefusals(t *testing.T) {
	hello := loadExample(t, "hello")
	noInterp := tempSkill(t, "plain", nil, map[string]string{"scripts/data": "no shebang here\n"})
	missingWS := filepath.Join(t.TempDir(), "missing")
	fileWS := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(fileWS, nil, 0o600))
	strict := strictPolicy(t)

	tests := []struct {
		name   string
		sk     *skill.Skill
		script string
		req    sandboxrun.Request
		is     error // the underlying sentinel, when there is one
		want   string
	}{
		{"traversal", hello, "../SKILL.md", sandboxrun.Request{}, policy.ErrOutsideScripts, "../SKILL.md"},
		{"traversal through scripts", hello, "scripts/../SKILL.md", sandboxrun.Request{}, policy.ErrOutsideScripts, "SKILL.md"},
		{"missing", hello, "scripts/missing.py", sandboxrun.Request{}, policy.ErrNotFound, "scripts/missing.py"},
		{"no interpreter", noInterp, "scripts/data", sandboxrun.Request{}, policy.ErrNoInterpreter, "shebang"},
		{"args array", hello, "scripts/echo.py", sandboxrun.Request{Args: []byte(`[1]`)}, policy.ErrBadArgs, "object"},
		{"args not JSON", hello, "scripts/echo.py", sandboxrun.Request{Args: []byte(`{`)}, policy.ErrBadArgs, "JSON"},
		{"args too large", hello, "scripts/echo.py", sandboxrun.Request{Args: []byte(`{"a":"` + strings.Repeat("x", policy.MaxArgsBytes) + `"}`)}, policy.ErrBadArgs, ""},
		{"reserved env", hello, "scripts/echo.py", sandboxrun.Request{Env: map[string]string{"SKILL_DIR": "/"}}, policy.ErrReservedEnv, "SKILL_DIR"},
		{"invalid env name", hello, "scripts/echo.py", sandboxrun.Request{Env: map[string]string{"A-B": "1"}}, policy.ErrInvalidEnv, "A-B"},
		{"memory above ceiling", hello, "scripts/echo.py", sandboxrun.Request{MemoryMiB: 129, Policy: strict}, policy.ErrLimit, "limits.memory.max"},
		{"timeout above ceiling", hello, "scripts/echo.py", sandboxrun.Request{Timeout: 11 * time.Second, Policy: strict}, policy.ErrLimit, "limits.timeout.max"},
		{"cpus above ceiling", hello, "scripts/echo.py", sandboxrun.Request{CPUs: 2, Policy: strict}, policy.ErrLimit, "cpus"},
		{"timeout above absolute bound", hello, "scripts/echo.py", sandboxrun.Request{Timeout: 601 * time.Second}, policy.ErrLimit, "600 s"},
		{"workspace is the root", hello, "scripts/echo.py", sandboxrun.Request{Workspace: "/"}, policy.ErrWorkspace, "--workspace"},
		{"workspace outside the roots", hello, "scripts/echo.py", sandboxrun.Request{Workspace: t.TempDir(), Policy: strict}, policy.ErrWorkspaceRoot, "/srv/none"},
		{"workspace missing", hello, "scripts/echo.py", sandboxrun.Request{Workspace: missingWS}, fs.ErrNotExist, "--workspace"},
		{"workspace is a file", hello, "scripts/echo.py", sandboxrun.Request{Workspace: fileWS}, nil, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := sandboxrun.PrepareScript(tt.sk, tt.script, tt.req)
			require.Nil(t, p)
			require.ErrorIs(t, err, sandboxrun.ErrRefused)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), "refused", "the marker does not change the message")
		})
	}
}

func TestPrepareCommand(t *testing.T) {
	hello := loadExample(t, "hello")

	t.Run("allowed", func(t *testing.T) {
		cmd := `echo '{"a":1}' | python3 /skills/hello/scripts/echo.py`
		p, err := sandboxrun.PrepareCommand(hello, cmd, sandboxrun.Request{Args: []byte(`{"b": 2}`)})
		require.NoError(t, err)
		require.Equal(t, bashcheck.BashArgv(cmd), p.Spec.Argv)
		require.Equal(t, "bash", p.Spec.Runtime)
		require.Empty(t, p.Script)
		require.Equal(t, `{"b":2}`, string(p.Spec.Stdin))
		require.Equal(t, 10*time.Second, p.Spec.Limits.Timeout)
	})

	tests := []struct {
		name    string
		sk      *skill.Skill
		command string
		part    string
		suggest string
	}{
		{"unlisted program", hello, "rm -rf /", "rm -rf /", "Bash(rm:*)"},
		{"second of a list", hello, "echo hi; node x.js", "node x.js", "Bash(node:*)"},
		{"substitution", hello, "echo $(id)", "", ""},
		{"no allowed-tools", tempSkill(t, "bare", nil, nil), "echo hi", "echo hi", "Bash(echo:*)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := sandboxrun.PrepareCommand(tt.sk, tt.command, sandboxrun.Request{})
			require.Nil(t, p)
			require.ErrorIs(t, err, sandboxrun.ErrRefused)
			require.ErrorIs(t, err, policy.ErrDenied)
			var denied *policy.DeniedError
			require.True(t, errors.As(err, &denied), "%T", err)
			require.Equal(t, tt.command, denied.Command)
			require.NotEmpty(t, denied.Reason)
			if tt.part != "" {
				require.Equal(t, tt.part, denied.Part)
			}
			require.Equal(t, tt.suggest, denied.Suggest)
			require.Equal(t, denied.Error(), err.Error())
		})
	}

	t.Run("allowed command with bad arguments", func(t *testing.T) {
		_, err := sandboxrun.PrepareCommand(hello, "echo hi", sandboxrun.Request{Args: []byte(`"x"`)})
		require.ErrorIs(t, err, sandboxrun.ErrRefused)
		require.ErrorIs(t, err, policy.ErrBadArgs)
	})

	t.Run("allowed command with reserved env", func(t *testing.T) {
		_, err := sandboxrun.PrepareCommand(hello, "echo hi", sandboxrun.Request{Env: map[string]string{"PATH": "/evil"}})
		require.ErrorIs(t, err, sandboxrun.ErrRefused)
		require.ErrorIs(t, err, policy.ErrReservedEnv)
	})
}

func TestPreparePython(t *testing.T) {
	hello := loadExample(t, "hello")
	tests := []struct {
		name string
		code []byte
		req  sandboxrun.Request
		is   error
		want string
	}{
		{"empty", nil, sandboxrun.Request{}, nil, "no code"},
		{"empty slice", []byte{}, sandboxrun.Request{}, nil, "no code"},
		{"oversize", bytes.Repeat([]byte("#"), sandboxrun.MaxCodeBytes+1), sandboxrun.Request{}, nil, "scripts/"},
		{"reserved env", []byte("print(1)"), sandboxrun.Request{Env: map[string]string{"HOME": "/root"}}, policy.ErrReservedEnv, "HOME"},
		{"timeout above ceiling", []byte("print(1)"), sandboxrun.Request{Timeout: time.Minute, Policy: strictPolicy(t)}, policy.ErrLimit, "limits.timeout.max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := sandboxrun.PreparePython(hello, tt.code, tt.req)
			require.Nil(t, p)
			require.ErrorIs(t, err, sandboxrun.ErrRefused)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.Contains(t, err.Error(), tt.want)
		})
	}

	t.Run("at the size limit", func(t *testing.T) {
		code := bytes.Repeat([]byte("#"), sandboxrun.MaxCodeBytes)
		p, err := sandboxrun.PreparePython(hello, code, sandboxrun.Request{})
		require.NoError(t, err)
		require.Equal(t, []string{"python3", "-"}, p.Spec.Argv)
		require.Equal(t, "python3", p.Spec.Runtime)
		require.Equal(t, code, p.Spec.Stdin, "the code reaches python3 on stdin")
		require.Empty(t, p.Script)
	})
}

func TestRunnerImageAndAssets(t *testing.T) {
	t.Setenv(sandboxrun.RunnerImageEnv, "") // the default, whatever the developer's shell sets
	require.Regexp(t, `^\d+\.\d+\.\d+`, sandboxrun.Version)
	t.Setenv(sandboxrun.RunnerImageEnv, "") // set while testing a branch's own runner
	require.Equal(t, "sandboxrun/runner:"+sandboxrun.Version, sandboxrun.RunnerImage())
	t.Setenv(sandboxrun.RunnerImageEnv, "example/runner:pinned")
	require.Equal(t, "example/runner:pinned", sandboxrun.RunnerImage())

	onDisk, err := os.ReadFile("Dockerfile.runner")
	require.NoError(t, err)
	require.Equal(t, onDisk, sandboxrun.RunnerDockerfile, "the embedded Dockerfile is the repository's")
	require.Contains(t, string(sandboxrun.RunnerDockerfile), "sandbox-init")
}

func TestCheckCommandResolvesBaseDir(t *testing.T) {
	sk, err := skill.Load("skills/hello")
	require.NoError(t, err)
	tests := []struct {
		command, want string
		allowed       bool
	}{
		{"python3 {baseDir}/scripts/echo.py", "python3 /skills/hello/scripts/echo.py", true},
		{"echo hi | python3 {baseDir}/scripts/echo.py", "echo hi | python3 /skills/hello/scripts/echo.py", true},
		{"cat {baseDir}/SKILL.md", "cat /skills/hello/SKILL.md", false},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			got, err := sandboxrun.CheckCommand(sk, nil, tt.command)
			require.Equal(t, tt.want, got)
			if tt.allowed {
				require.NoError(t, err)
				p, err := sandboxrun.PrepareCommand(sk, tt.command, sandboxrun.Request{})
				require.NoError(t, err)
				require.Equal(t, bashcheck.BashArgv(tt.want), p.Spec.Argv, "the resolved command is what runs")
				return
			}
			require.ErrorIs(t, err, sandboxrun.ErrRefused)
			var denied *policy.DeniedError
			require.ErrorAs(t, err, &denied)
		})
	}
}

func TestPrepareNarrowsTheNetwork(t *testing.T) {
	sk := tempSkill(t, "fetcher", []string{"metadata:", `  network_access: "true"`, `  allowed_domains: "api.example.com pypi.org"`},
		map[string]string{"scripts/get.py": "print(1)\n"})
	p, err := sandboxrun.PrepareScript(sk, "scripts/get.py", sandboxrun.Request{AllowDomains: []string{"pypi.org:443", "evil.com"}})
	require.NoError(t, err)
	require.False(t, p.Spec.Limits.Network)
	require.Equal(t, []string{"pypi.org:443"}, p.Spec.Limits.Egress.Allow)

	_, err = sandboxrun.PrepareScript(sk, "scripts/get.py", sandboxrun.Request{Env: map[string]string{"HTTPS_PROXY": "http://elsewhere:1"}})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.ErrorContains(t, err, "[HTTPS_PROXY] are set by sandboxrun")

	_, err = sandboxrun.PrepareScript(sk, "scripts/get.py", sandboxrun.Request{AllowDomains: []string{"https://x"}})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.ErrorIs(t, err, egressrule.ErrDomain)
}
