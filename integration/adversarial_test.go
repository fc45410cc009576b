//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// shSpec runs a shell script in an empty skill.
func shSpec(t *testing.T, script string) sandbox.Spec {
	t.Helper()
	spec := pySpec(t, "")
	spec.Argv = []string{"bash", "-c", script}
	spec.Runtime = "bash"
	return spec
}

// TestScriptCannotSilenceInit: signals the script may send init (it runs
// under the same uid) must not stop the report from arriving.
func TestScriptCannotSilenceInit(t *testing.T) {
	t.Parallel()
	for _, sig := range []string{"QUIT", "ABRT", "SEGV", "BUS", "FPE", "ILL", "TRAP", "SYS", "STKFLT", "USR1", "USR2", "ALRM", "PIPE", "KILL", "STOP", "TSTP", "TTIN", "TTOU", "XCPU", "XFSZ", "VTALRM", "PROF", "PWR", "WINCH", "URG", "IO", "CHLD", "CONT"} {
		t.Run(sig, func(t *testing.T) {
			t.Parallel()
			res := run(t, shSpec(t, "kill -"+sig+" 1; sleep 0.3; echo alive; exit 3"))
			require.Equal(t, 3, res.ExitCode, "stderr: %s", res.Stderr)
			require.Equal(t, "alive\n", res.Stdout)
		})
	}
}

func TestKillEverythingFromInside(t *testing.T) {
	t.Parallel()
	res := run(t, shSpec(t, "sleep 100 & sleep 100 & kill -9 -1; echo still here; exit 5"))
	require.Equal(t, 5, res.ExitCode, "stderr: %s", res.Stderr)
	require.Equal(t, "still here\n", res.Stdout)
}

func TestDaemonizedProcesses(t *testing.T) {
	t.Parallel()
	t.Run("closes its output and leaves the group", func(t *testing.T) {
		begin := time.Now()
		res := run(t, shSpec(t, "setsid bash -c 'exec >/dev/null 2>&1 </dev/null; sleep 100' & echo parent; exit 0"))
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		require.Equal(t, "parent\n", res.Stdout)
		require.Less(t, time.Since(begin), 10*time.Second)
	})
	t.Run("keeps the output open", func(t *testing.T) {
		begin := time.Now()
		res := run(t, shSpec(t, "setsid bash -c 'while :; do echo spam; sleep 0.1; done' & echo parent; exit 0"))
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		require.Contains(t, res.Stdout, "parent\n")
		require.Less(t, time.Since(begin), 10*time.Second)
	})
}

func TestStoppedScriptTimesOut(t *testing.T) {
	t.Parallel()
	spec := shSpec(t, "kill -STOP $$; echo resumed")
	spec.Limits.Timeout = 2 * time.Second
	res := run(t, spec)
	require.True(t, res.TimedOut)
	require.Equal(t, 124, res.ExitCode)
}

func TestHugeSingleLine(t *testing.T) {
	t.Parallel()
	spec := pySpec(t, `
import sys
chunk = b"x" * (1 << 20)
for _ in range(200):
    sys.stdout.buffer.write(chunk)
`)
	spec.Limits.OutputBytes = 64 << 10
	spec.Limits.MemoryBytes = 64 << 20
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.True(t, res.StdoutTruncated)
	require.EqualValues(t, 200<<20, res.StdoutBytes)
	require.Len(t, res.Stdout, 64<<10)
}

func TestTmpIsNotExecutable(t *testing.T) {
	t.Parallel()
	res := run(t, shSpec(t, "cp /bin/true /tmp/t && chmod +x /tmp/t && /tmp/t; echo $?"))
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "126\n", res.Stdout)
}

// TestWorkspaceHandBackIsContained: what a hostile script leaves in a
// writable workspace must not make the host-side hand-back touch anything
// outside it, nor leave a privileged file behind.
func TestWorkspaceHandBackIsContained(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s"), 0o600))
	ws := t.TempDir()
	prog := filepath.Join(ws, "prog")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho original\n"), 0o755))
	require.NoError(t, unix.Chmod(prog, 0o4755))

	spec := shSpec(t, `
ln -s `+secret+` link-out
ln -s / link-root
mkdir d && ln -s `+outside+` d/escape
echo x > suid && chmod 6755 suid
mkdir sgid && chmod 2777 sgid && echo y > sgid/f
ln suid hard
python3 - <<'PY'
import mmap, os
try:
    fd = os.open("prog", os.O_RDWR)
    m = mmap.mmap(fd, 0)
    m[10:18] = b"replaced"
    print("wrote prog")
except OSError as e:
    print("prog:", e.strerror)
PY
`)
	writable(t, &spec, ws)
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "prog: Permission denied\n", res.Stdout)

	var st unix.Stat_t
	require.NoError(t, unix.Stat(secret, &st))
	require.Equal(t, uint32(os.Getuid()), st.Uid)
	require.Equal(t, uint32(0o600), st.Mode&0o7777, "a file behind a symlink is untouched")
	require.NoError(t, unix.Stat(prog, &st))
	require.Equal(t, uint32(0o4755), st.Mode&0o7777, "the caller's own set-id file keeps its mode")
	b, err := os.ReadFile(prog)
	require.NoError(t, err)
	require.Equal(t, "#!/bin/sh\necho original\n", string(b))

	err = filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		require.NoError(t, unix.Lstat(p, &st))
		require.Equal(t, uint32(os.Getuid()), st.Uid, "%s is the caller's", p)
		if p != prog && fi.Mode().IsRegular() {
			require.Zero(t, st.Mode&(unix.S_ISUID|unix.S_ISGID), "%s is not set-id", p)
		}
		return nil
	})
	require.NoError(t, err)
}

// TestHostKilledMidRun: a sandboxrun killed with SIGKILL cannot clean up.
// Its sandbox must still end on its own at the timeout, and Reap must find
// it by its dead owner and remove it.
func TestHostKilledMidRun(t *testing.T) {
	// Serial (see main_test.go): reaps, and leaves a dead owner's sandbox that any other sandboxrun process would reap.
	const skill = "cli-killed"
	root := cliSkill(t, skill, "", map[string]string{
		"scripts/wait.py": "import time\nprint('started', flush=True)\ntime.sleep(60)\n",
	})
	// The killed process runs under a host name of its own (a UTS
	// namespace), which its sandbox's owner label records: only this
	// test's Reap, told that name, may select the orphan. Any other
	// sandboxrun on this machine (a server of a parallel suite, which
	// reaps dead owners' sandboxes as it runs) sees another host's
	// sandbox and leaves it, so the window between the kill and the Reap
	// is the test's own.
	ownerHost := fmt.Sprintf("it-killed-%d", os.Getpid())
	cmd := exec.Command("unshare", "--uts", "sh", "-c", `hostname "$0" && exec "$@"`, ownerHost,
		sandboxrunBin(t), "--skills", root, "run", "--timeout", "3s", skill, "scripts/wait.py")
	cmd.Dir = root
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

	ctx := context.Background()
	left, err := runner.Client().ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", sandbox.LabelSkill+"="+skill),
		filters.Arg("label", sandbox.LabelOwnerPID+"="+strconv.Itoa(cmd.Process.Pid)))})
	require.NoError(t, err)
	require.Len(t, left, 1, "the killed process could not remove its sandbox")
	id := left[0].ID
	t.Cleanup(func() {
		_ = runner.Client().ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	})

	// Init's own timeout ends the script although no one listens (the
	// bound is a hang's, with room for a busy host).
	require.Eventually(t, func() bool {
		info, err := runner.Client().ContainerInspect(ctx, id)
		return err == nil && !info.State.Running
	}, 2*time.Minute, 200*time.Millisecond, "the orphaned sandbox stops at its timeout")

	reaped, err := runner.Reap(ctx, sandbox.ReapOptions{OnlyDeadOwners: true, Host: ownerHost})
	require.NoError(t, err)
	var found bool
	for _, r := range reaped {
		found = found || (r.ID == id && r.Removed)
	}
	require.True(t, found, "reap removed the orphan: %+v", reaped)
	requireNoSkillContainers(t, skill)
}
