//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestCLICommandBashWouldReadDifferently runs the known splicing forms
// through the CLI: each is refused before a container exists, and the
// marker file the spliced command would write never appears.
func TestCLICommandBashWouldReadDifferently(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "tb-cmd", "allowed-tools: Bash(git status:*) Bash(cat:*) Write\n", nil)
	ws := t.TempDir()
	require.NoError(t, os.Chmod(ws, 0o777))
	for name, cmd := range map[string]string{
		"continuation in double quotes": "git status \"$\\\n(touch /workspace/pwned)\"",
		"continuation after comment":    "git status # \\\ntouch /workspace/pwned",
		"crlf":                          "git status\r\ntouch /workspace/pwned",
		"extglob process substitution":  "git status @(a|>(touch /workspace/pwned))",
		"default word substitution":     "git status ${X:-<(touch /workspace/pwned)}",
		"spliced heredoc delimiter":     "cat <<E\\\nOF\nx\nEOF\ntouch /workspace/pwned\nEOF",
	} {
		t.Run(name, func(t *testing.T) {
			r := cli(t, ws, nil, "", "--skills", root, "exec", "--workspace", ws, "tb-cmd", "--", cmd)
			require.Equal(t, 2, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, "command denied")
			require.NoFileExists(t, filepath.Join(ws, "pwned"))
			requireNoSkillContainers(t, "tb-cmd")
		})
	}
}

// TestCLIRefusesCodeLoadingEnv: a variable that makes bash, Python or the
// loader run other code is refused on every path, before any container.
func TestCLIRefusesCodeLoadingEnv(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "tb-env", "allowed-tools: Bash(true)\n", map[string]string{
		"scripts/ok.py": "print('ran')\n",
	})
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "x.sh"), []byte("touch /tmp/pwned\n"), 0o644))
	for _, args := range [][]string{
		{"exec", "--env", "BASH_ENV=/workspace/x.sh", "tb-env", "--", "true"},
		{"run", "--env", "PYTHONSTARTUP=/workspace/x.py", "tb-env", "scripts/ok.py"},
		{"python", "--env", "LD_PRELOAD=/workspace/x.so", "tb-env", "--code", "print(1)"},
		{"exec", "--env", "GIT_SSH_COMMAND=sh /workspace/x.sh", "tb-env", "--", "true"},
		{"exec", "--env", "BASH_FUNC_true%%=() { id; }", "tb-env", "--", "true"},
	} {
		t.Run(args[2], func(t *testing.T) {
			full := append([]string{"--skills", root}, args[:1]...)
			full = append(full, "--workspace", ws)
			full = append(full, args[1:]...)
			r := cli(t, ws, nil, "", full...)
			require.Equal(t, 2, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, "environment variable")
			requireNoSkillContainers(t, "tb-env")
		})
	}
}

// TestCLILimitsBeyondTheHost: the engine would accept memory above the
// host's (no cap in practice) and fail on CPUs with a raw error; both are
// refused with the host's figure before any container.
func TestCLILimitsBeyondTheHost(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "tb-host", "metadata:\n  max_memory: \"1048576\"\n", map[string]string{"scripts/ok.py": "print('ran')\n"})
	ws := t.TempDir()
	r := cli(t, ws, nil, "", "--skills", root, "run", "--workspace", ws, "tb-host", "scripts/ok.py")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "max_memory / --memory")
	require.Contains(t, r.stderr, "engine host's")

	r = cli(t, ws, nil, "", "--skills", root, "run", "--workspace", ws, "--memory", "256m", "--cpus", "4096", "tb-host", "scripts/ok.py")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "max_cpus / --cpus")
	requireNoSkillContainers(t, "tb-host")

	r = cli(t, ws, nil, "", "--skills", root, "run", "--workspace", ws, "--memory", "256m", "tb-host", "scripts/ok.py")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "ran\n", r.stdout)
}

// TestCLIResultWhenKilledFromOutside: a sandbox killed by someone else
// (docker kill, an engine failure) still ends in a Result with error set and
// exit status 125, and leaves no container.
func TestCLIResultWhenKilledFromOutside(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "tb-killed", "", map[string]string{"scripts/wait.py": "import time\nprint('started', flush=True)\ntime.sleep(60)\n"})
	ws := t.TempDir()
	cmd := exec.Command(sandboxrunBin(t), "--skills", root, "run", "--json", "--workspace", ws, "tb-killed", "scripts/wait.py")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	trackOwner(t, cmd.Process.Pid)
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var ids []string
	require.Eventually(t, func() bool {
		list, err := runner.Client().ContainerList(context.Background(), container.ListOptions{
			Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSkill+"=tb-killed")),
		})
		if err != nil || len(list) == 0 {
			return false
		}
		ids = []string{list[0].ID}
		return true
	}, 30*time.Second, 50*time.Millisecond)
	// Let the script start, then kill the container from outside.
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, runner.Client().ContainerKill(context.Background(), ids[0], "KILL"))

	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Equal(t, 125, ee.ExitCode(), errb.String())
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), "stdout: %q", out.String())
	require.NotEmpty(t, res.Error)
	require.False(t, res.Success)
	require.NotEmpty(t, res.ID)
	require.Contains(t, errb.String(), "failed mid-run")
	requireNoSkillContainers(t, "tb-killed")
}

// TestCLIWorkspaceGuard: a workspace that resolves to the host's root or a
// system folder, by path or through a symlink, and a current directory of /
// as the default workspace, are refused before any container.
func TestCLIWorkspaceGuard(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "tb-ws", "", map[string]string{"scripts/ls.py": "import os\nprint(os.listdir('/workspace'))\n"})
	links := t.TempDir()
	toRoot := filepath.Join(links, "work")
	require.NoError(t, os.Symlink("/", toRoot))
	toEtc := filepath.Join(links, "conf")
	require.NoError(t, os.Symlink("/etc", toEtc))
	for name, c := range map[string]struct {
		dir, workspace, want string
	}{
		"symlink to /":       {root, toRoot, "resolved to /"},
		"symlink to /etc":    {root, toEtc, "/etc"},
		"the Docker engine":  {root, "/var/lib/docker", "/var/lib/docker"},
		"default of cwd /":   {"/", "", "is /,"},
		"socket folder /run": {root, "/run", "/run"},
		"parent escape to /": {root, root + "/../../../../../../..", "is /,"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"--skills", root, "run"}
			if c.workspace != "" {
				args = append(args, "--workspace", c.workspace)
			}
			r := cli(t, c.dir, nil, "", append(args, "tb-ws", "scripts/ls.py")...)
			require.Equal(t, 2, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, c.want)
			require.Contains(t, r.stderr, "--workspace")
			requireNoSkillContainers(t, "tb-ws")
		})
	}
}
