//go:build integration

package integration

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
)

// TestCLIEgressFolderOfAKilledOwnerIsReaped: a sandboxrun SIGKILLed while
// its proxy serves cannot remove the proxy's folder; `sandboxrun reap`
// removes it once the owner is gone, and leaves live owners' folders.
func TestCLIEgressFolderOfAKilledOwnerIsReaped(t *testing.T) {
	// Serial (see main_test.go): reaps, and leaves a dead owner's sandbox that any other sandboxrun process would reap.
	const skill = "egress-killed"
	root := cliSkill(t, skill, "metadata:\n  network_access: \"true\"\n  allowed_domains: \"127.0.0.1:9\"\n", map[string]string{
		"scripts/wait.py": "import time\nprint('started', flush=True)\ntime.sleep(60)\n",
	})
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("network: allowlist\nallowed_domains: [\"127.0.0.1:9\"]\negress:\n  allow_cidrs: [127.0.0.1/32]\n"), 0o644))
	tmp := shortDir(t)
	env := []string{"TMPDIR=" + tmp, "SANDBOXRUN_RUNNER_IMAGE=" + sandboxrun.RunnerImage()}

	cmd := exec.Command(sandboxrunBin(t), "--skills", root, "--policy", pol, "run", "--timeout", "3s", "--workspace", root, skill, "scripts/wait.py")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	trackOwner(t, cmd.Process.Pid)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make([]byte, len("started\n"))
	_, err = io.ReadFull(stdout, line)
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	left, err := filepath.Glob(filepath.Join(tmp, "sandboxrun-egress-*"))
	require.NoError(t, err)
	require.Len(t, left, 1, "the killed process could not remove its proxy's folder")
	require.FileExists(t, filepath.Join(left[0], "owner.json"))
	live := filepath.Join(tmp, "sandboxrun-egress-live")
	require.NoError(t, os.Mkdir(live, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(live, "owner.json"), []byte(`{"io.sandboxrun.owner-pid":"1","io.sandboxrun.owner-host":"`+hostname(t)+`"}`), 0o600))

	// The orphaned sandbox ends at its timeout; reap removes it and the folder.
	require.Eventually(t, func() bool {
		r := cli(t, root, env, "", "reap")
		return r.code == 0 && noDir(left[0])
	}, 60*time.Second, time.Second, "reap removes the dead owner's folder")
	require.DirExists(t, live, "pid 1 is alive: its folder stays")
	requireNoSkillContainers(t, skill)
}

func noDir(p string) bool {
	_, err := os.Stat(p)
	return os.IsNotExist(err)
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	require.NoError(t, err)
	return h
}
