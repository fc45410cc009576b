package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

func TestBackgroundProcesses(t *testing.T) {
	t.Run("left in the group is killed, not waited for", func(t *testing.T) {
		t.Parallel()
		o := runJob(t, newJob("sh", "-c", "sleep 30 & echo started"))
		require.Equal(t, 0, o.report.ExitCode)
		require.Equal(t, "started\n", string(o.stdout))
		// Not cut at the pipe bound: the pipe reached EOF because the
		// group kill took sleep, which held it, down.
		require.False(t, o.report.StdoutTruncated)
		require.Less(t, o.elapsed, 20*time.Second)
	})
	t.Run("escaped with setsid holds the pipe for a bounded time", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		t.Cleanup(func() { killPIDFile(t, pidFile) })
		job := newJob("sh", "-c", `setsid sh -c 'echo $$ > "$1"; exec sleep 30' sh "$1" &
while [ ! -s "$1" ]; do sleep 0.02; done
echo started`, "sh", pidFile)
		o := runJob(t, job)
		require.Equal(t, 0, o.report.ExitCode)
		require.Equal(t, "started\n", string(o.stdout))
		require.True(t, o.report.StdoutTruncated, "relaying was cut short, so the output may be incomplete")
		require.GreaterOrEqual(t, o.elapsed, pipeWait)
		require.Less(t, o.elapsed, pipeWait+15*time.Second, "init must not wait for the escaped process")
	})
}

// killPIDFile kills a process that escaped init's control in a test; in a
// container, init's exit would take it down with the namespace.
func killPIDFile(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err == nil && pid > 1 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// An orphan re-parented to init must be reaped by init, and its CPU time
// must count: the child polls with kill -0, which succeeds on a zombie, so
// it only finishes once init has reaped the orphan.
func TestOrphanIsReapedAndCounted(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	burn := "import time\nwhile time.process_time() < 0.3:\n    pass\n"
	job := newJob("sh", "-c", `( python3 -c "$2" & echo $! > "$1" )
pid=$(cat "$1")
while kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
echo reaped`, "sh", pidFile, burn)
	job.TimeoutMS = 30_000
	o := runJob(t, job)
	require.False(t, o.report.TimedOut, "the orphan was never reaped")
	require.Equal(t, 0, o.report.ExitCode)
	require.Equal(t, "reaped\n", string(o.stdout))
	require.GreaterOrEqual(t, o.report.UserCPUMS+o.report.SystemCPUMS, int64(290))
}

func TestStopRequestToInit(t *testing.T) {
	tests := []struct {
		name   string
		sig    syscall.Signal
		script string
		grace  int64
		want   syscall.Signal
	}{
		{"SIGTERM forwarded", syscall.SIGTERM, "echo ready; exec sleep 30", 10_000, syscall.SIGTERM},
		{"SIGINT becomes SIGTERM", syscall.SIGINT, "echo ready; exec sleep 30", 10_000, syscall.SIGTERM},
		{"SIGHUP becomes SIGTERM", syscall.SIGHUP, "echo ready; exec sleep 30", 10_000, syscall.SIGTERM},
		{"SIGKILL after grace", syscall.SIGTERM, `trap "" TERM; echo ready; sleep 30`, 300, syscall.SIGKILL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := newJob("sh", "-c", tc.script)
			job.TimeoutMS, job.GraceMS = 30_000, tc.grace
			p := startInit(t, jobReader(t, job))
			typ, payload := p.nextFrame(t)
			require.Equal(t, frame.Stdout, typ)
			require.Equal(t, "ready\n", string(payload))

			require.NoError(t, p.cmd.Process.Signal(tc.sig))
			o := p.finish(t)
			require.Equal(t, -1, o.report.ExitCode)
			require.Equal(t, int(tc.want), o.report.Signal)
			require.False(t, o.report.TimedOut, "a stop request is not a timeout")
			require.Less(t, o.report.DurationMS, int64(15_000))
		})
	}
}

// A warm container stopped before its job arrives must answer at once rather
// than ignore SIGTERM as PID 1 would by default.
func TestStopBeforeJob(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	p := startInit(t, r)
	r.Close()

	// Half a job: once init has read it, its handlers are in place.
	_, err = w.Write([]byte(`{"argv":["sh","-c","echo ran"],`))
	require.NoError(t, err)
	waitPipeDrained(t, w)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))

	o := p.finish(t)
	require.Equal(t, 126, o.report.ExitCode)
	require.Contains(t, o.report.Error, "before a job arrived")
	require.Empty(t, o.stdout)
}

func waitPipeDrained(t *testing.T, w *os.File) {
	t.Helper()
	fd := int(w.Fd())
	require.Eventually(t, func() bool {
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD: bytes still in the pipe
		return err == nil && n == 0
	}, 30*time.Second, 10*time.Millisecond)
}

func TestHostKeepsStdinOpen(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	p := startInit(t, r)
	r.Close()

	b, err := json.Marshal(newJob("sh", "-c", "echo ok"))
	require.NoError(t, err)
	_, err = w.Write(b)
	require.NoError(t, err)
	o := p.finish(t) // stdin still open: the job alone must be enough
	require.Equal(t, 0, o.report.ExitCode)
	require.Equal(t, "ok\n", string(o.stdout))
}

// A host that stops reading must not freeze the child: init keeps draining,
// the child finishes, and init exits 1 because its result went nowhere.
func TestHostStopsReading(t *testing.T) {
	done := filepath.Join(t.TempDir(), "done")
	job := newJob("python3", "-c", `import sys
for _ in range(64):
    sys.stdout.buffer.write(b"x" * 65536)
open(sys.argv[1], "w").close()
`, done)
	job.TimeoutMS = 0 // a blocked child would hang until the test's kill
	p := startInit(t, jobReader(t, job))
	require.NoError(t, p.stdout.Close())

	err := p.cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "init said: %s", p.diag)
	require.Equal(t, 1, exitErr.ExitCode(), "init said: %s", p.diag)
	require.Contains(t, p.diag.String(), "write result frame")
	require.FileExists(t, done, "the child did not finish writing")
}

// The child runs under init's uid. It must not be able to open init's stdout
// through /proc and write a forged Result frame.
func TestChildCannotWriteInitsStdout(t *testing.T) {
	probe := `import os
try:
    f = open("/proc/%d/fd/1" % os.getppid(), "wb", buffering=0)
    f.write(b"\x03\x00\x00\x00\x0f{\"exit_code\":0}")
    print("forged")
except PermissionError:
    print("denied")
`
	// init's stdout is a pipe anyone may open, so only init's own
	// protection can stop the child.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	require.NoError(t, w.Chmod(0o666))
	configure := func(c *exec.Cmd) { c.Stdout = w }
	if os.Geteuid() == 0 {
		// Root may open anything; run init, and so the child, as nobody.
		bin := copyForNobody(t)
		configure = func(c *exec.Cmd) {
			c.Stdout = w
			c.Path, c.Args = bin, []string{bin}
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
	}
	p := startInit(t, jobReader(t, newJob("python3", "-c", probe)), configure)
	require.NoError(t, w.Close())
	p.stdout, p.frames = r, frame.NewReader(r)
	o := p.finish(t)
	require.Equal(t, 0, o.report.ExitCode, "stderr: %s", o.stderr)
	require.Equal(t, "denied\n", string(o.stdout))
}

// copyForNobody copies the test binary where an unprivileged user can run it.
func copyForNobody(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandbox-init-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	bin := filepath.Join(dir, "sandbox-init.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, errors.Join(err, dst.Close()))
	return bin
}

func TestDurationCoversTheChild(t *testing.T) {
	o := runJob(t, newJob("sleep", "0.3"))
	require.Equal(t, 0, o.report.ExitCode)
	require.GreaterOrEqual(t, o.report.DurationMS, int64(300))
	require.Less(t, o.report.DurationMS, int64(10_000))
	require.True(t, bytes.Equal(nil, o.stdout))
}

// TestChildCannotCrashInit: the child runs under init's uid, so it may signal
// init. Signals the Go runtime would die of must not cost the report.
func TestChildCannotCrashInit(t *testing.T) {
	for _, sig := range []string{"QUIT", "ABRT", "SEGV", "BUS", "FPE", "ILL", "TRAP", "SYS", "STKFLT", "USR1", "ALRM"} {
		t.Run(sig, func(t *testing.T) {
			t.Parallel()
			o := runJob(t, newJob("bash", "-c", "kill -"+sig+" $PPID && sleep 0.2 && echo alive && exit 3"))
			require.Equal(t, 3, o.report.ExitCode, "stderr: %s", o.stderr)
			require.Equal(t, "alive\n", string(o.stdout))
		})
	}
}
