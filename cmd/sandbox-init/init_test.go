package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		code     int
		signal   syscall.Signal
		stdout   string
		stderrIs string
	}{
		{"success", "echo hello; echo oops >&2", 0, 0, "hello\n", "oops\n"},
		{"exit 3", "echo partial; exit 3", 3, 0, "partial\n", ""},
		{"exit 255", "exit 255", 255, 0, "", ""},
		{"SIGSEGV", "kill -SEGV $$", -1, syscall.SIGSEGV, "", ""},
		{"SIGKILL", "echo before; kill -KILL $$", -1, syscall.SIGKILL, "before\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := runJob(t, newJob("sh", "-c", tc.script))
			require.Empty(t, o.report.Error)
			require.Equal(t, tc.code, o.report.ExitCode)
			require.Equal(t, int(tc.signal), o.report.Signal)
			require.False(t, o.report.TimedOut)
			require.Equal(t, tc.stdout, string(o.stdout))
			require.Equal(t, tc.stderrIs, string(o.stderr))
			require.Equal(t, int64(len(tc.stdout)), o.report.StdoutBytes)
			require.Equal(t, int64(len(tc.stderrIs)), o.report.StderrBytes)
			require.False(t, o.report.StdoutTruncated)
			require.False(t, o.report.StderrTruncated)
			require.Positive(t, o.report.PeakRSSKB)
		})
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		timeout  int64
		grace    int64
		code     int
		signal   syscall.Signal
		timedOut bool
		minMS    int64 // the child lived at least this long
		maxMS    int64 // and was gone by this
	}{
		// exec: the shell must not linger as a separate process.
		{"SIGTERM honoured", "exec sleep 30", 300, 10_000, -1, syscall.SIGTERM, true, 300, 5_000},
		{"SIGTERM ignored, then SIGKILL", `trap "" TERM; sleep 30`, 300, 400, -1, syscall.SIGKILL, true, 700, 6_000},
		{"exits during grace", `trap "exit 7" TERM; while :; do sleep 0.05; done`, 300, 10_000, 7, 0, true, 300, 5_000},
		{"stopped child is continued to take SIGTERM", "kill -STOP $$; sleep 30", 300, 10_000, -1, syscall.SIGTERM, true, 300, 5_000},
		{"zero grace kills at once", `trap "" TERM; sleep 30`, 300, 0, -1, syscall.SIGKILL, true, 300, 5_000},
		{"no init timeout", "sleep 0.3", 0, 0, 0, 0, false, 300, 10_000},
		{"finishes before the timeout", "exit 4", 10_000, 100, 4, 0, false, 0, 5_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := newJob("sh", "-c", tc.script)
			job.TimeoutMS, job.GraceMS = tc.timeout, tc.grace
			o := runJob(t, job)
			require.Empty(t, o.report.Error)
			require.Equal(t, tc.timedOut, o.report.TimedOut)
			require.Equal(t, tc.code, o.report.ExitCode)
			require.Equal(t, int(tc.signal), o.report.Signal)
			require.GreaterOrEqual(t, o.report.DurationMS, tc.minMS)
			require.Less(t, o.report.DurationMS, tc.maxMS)
			require.Less(t, o.elapsed, time.Duration(tc.maxMS)*time.Millisecond+pipeWait)
		})
	}
}

func TestOutputCap(t *testing.T) {
	// The child writes n bytes of a fixed pattern to each stream in odd
	// sized writes, so the cap falls inside a read.
	const writer = `import sys
n = int(sys.argv[1])
data = bytes(i % 251 for i in range(n))
for s in (sys.stdout.buffer, sys.stderr.buffer):
    for i in range(0, n, 4093):
        s.write(data[i:i+4093])
        s.flush()
`
	tests := []struct {
		name      string
		size      int
		limit     int64
		truncated bool
	}{
		{"under the cap", 5000, 10_000, false},
		{"exactly the cap", 10_000, 10_000, false},
		{"over the cap", 10_001, 10_000, true},
		{"far over the cap is drained", 4 << 20, 1000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := newJob("python3", "-c", writer, strconv.Itoa(tc.size))
			job.OutputCap = tc.limit
			o := runJob(t, job)
			require.Equal(t, 0, o.report.ExitCode, "stderr: %q", o.stderr)
			want := pattern(tc.size)[:min(int64(tc.size), tc.limit)]
			for name, got := range map[string][]byte{"stdout": o.stdout, "stderr": o.stderr} {
				require.Equal(t, len(want), len(got), name)
				require.True(t, bytes.Equal(want, got), "%s differs from what the child wrote", name)
			}
			require.Equal(t, int64(tc.size), o.report.StdoutBytes)
			require.Equal(t, int64(tc.size), o.report.StderrBytes)
			require.Equal(t, tc.truncated, o.report.StdoutTruncated)
			require.Equal(t, tc.truncated, o.report.StderrTruncated)
		})
	}
}

func TestStdin(t *testing.T) {
	tests := []struct {
		name  string
		argv  []string
		stdin []byte
		out   []byte
	}{
		{"JSON arguments", []string{"cat"}, []byte(`{"name":"x","n":[1,2]}`), []byte(`{"name":"x","n":[1,2]}`)},
		{"binary", []string{"cat"}, []byte{0, 0xff, '\n', 0x80, 0}, []byte{0, 0xff, '\n', 0x80, 0}},
		{"empty stdin reads EOF", []string{"sh", "-c", "cat; echo done"}, nil, []byte("done\n")},
		{"large stdin read in full", []string{"sh", "-c", "wc -c"}, pattern(1 << 20), []byte("1048576\n")},
		{"partly read", []string{"head", "-c", "5"}, pattern(512 << 10), pattern(5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := newJob(tc.argv...)
			job.Stdin = tc.stdin
			o := runJob(t, job)
			require.Equal(t, 0, o.report.ExitCode, "stderr: %q", o.stderr)
			require.Equal(t, tc.out, o.stdout)
		})
	}
}

func TestLargeStdinNeverRead(t *testing.T) {
	tests := []struct {
		name   string
		script string
		code   int
	}{
		{"exits at once", "exit 0", 0},
		{"runs a while without reading", "sleep 0.5; exit 5", 5},
		{"closes stdin first", "exec 0<&-; sleep 0.2; echo ok", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := newJob("sh", "-c", tc.script)
			job.Stdin = pattern(2 << 20)
			job.TimeoutMS = 30_000
			o := runJob(t, job)
			require.Equal(t, tc.code, o.report.ExitCode)
			require.False(t, o.report.TimedOut)
			// It did not hang on the unread stdin (the timeout is 30 s);
			// how fast is the bench's question.
			require.Less(t, o.elapsed, 25*time.Second)
		})
	}
}

func TestCannotRun(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec.sh")
	require.NoError(t, os.WriteFile(noexec, []byte("#!/bin/sh\necho hi\n"), 0o644))
	badShebang := filepath.Join(dir, "bad.sh")
	require.NoError(t, os.WriteFile(badShebang, []byte("#!/nonexistent/interp\n"), 0o755))
	noShebang := filepath.Join(dir, "data.bin")
	require.NoError(t, os.WriteFile(noShebang, []byte{0x7f, 0x00, 0x01}, 0o755))

	tests := []struct {
		name string
		job  func() frame.Job
		code int
		says string
	}{
		{"command not found", func() frame.Job { return newJob("no-such-command-xyz") }, 127, "not in PATH"},
		{"absolute path missing", func() frame.Job { return newJob("/no/such/file") }, 127, "does not exist"},
		{"not executable", func() frame.Job { return newJob(noexec) }, 126, "not executable"},
		{"missing interpreter", func() frame.Job { return newJob(badShebang) }, 127, "interpreter"},
		{"not a program", func() frame.Job { return newJob(noShebang) }, 126, "exec format error"},
		{"missing cwd", func() frame.Job { j := newJob("true"); j.Dir = filepath.Join(dir, "gone"); return j }, 126, "working directory"},
		{"no PATH in env", func() frame.Job { j := newJob("true"); j.Env = nil; return j }, 127, "no PATH"},
		{"bad job", func() frame.Job { j := newJob("true"); j.OutputCap = 0; return j }, 126, "output_cap is 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := runJob(t, tc.job())
			require.Equal(t, tc.code, o.report.ExitCode)
			require.Contains(t, o.report.Error, tc.says)
			require.Empty(t, o.stdout)
			require.Empty(t, o.stderr)
		})
	}
}

func TestBadJobInput(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		says  string
	}{
		{"empty stdin", nil, "stdin closed before a job arrived"},
		{"not JSON", []byte("run this please"), "decode job"},
		{"empty argv", []byte(`{"argv":[],"output_cap":10}`), "argv is empty"},
		{"unknown field", []byte(`{"argv":["true"],"output_cap":10,"user":"root"}`), "unknown field"},
		{"too large", append([]byte(`{"argv":["true"],"stdin":"`), bytes.Repeat([]byte("A"), maxJobBytes+10)...), "keep the child's stdin under"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := runRaw(t, tc.input)
			require.Equal(t, 126, o.report.ExitCode)
			require.Contains(t, o.report.Error, tc.says)
		})
	}
}

func TestNonUTF8RelayedExactly(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	job := newJob("python3", "-c", `import sys; b = bytes(range(256)); sys.stdout.buffer.write(b); sys.stderr.buffer.write(b[::-1])`)
	o := runJob(t, job)
	require.Equal(t, 0, o.report.ExitCode)
	require.Equal(t, all, o.stdout)
	rev := slices.Clone(all)
	slices.Reverse(rev)
	require.Equal(t, rev, o.stderr)
}

func TestEnvironmentAndCwdAreTheJobs(t *testing.T) {
	dir := t.TempDir()
	job := newJob("env")
	job.Env = append(slices.Clone(testEnv), "SKILL_NAME=demo", "WITH_EQUALS=a=b")
	job.Dir = dir
	o := runJob(t, job)
	require.Equal(t, 0, o.report.ExitCode)
	got := strings.Split(strings.TrimSuffix(string(o.stdout), "\n"), "\n")
	require.ElementsMatch(t, job.Env, got, "init's own environment must not leak")

	job = newJob("pwd")
	job.Dir = dir
	o = runJob(t, job)
	require.Equal(t, dir+"\n", string(o.stdout))
}

func TestInterleavedStreamsStayIntact(t *testing.T) {
	job := newJob("python3", "-c", `import sys
for i in range(2000):
    s = sys.stdout if i % 2 else sys.stderr
    s.write("line %d %s\n" % (i, "x" * (i % 97)))
    s.flush()
`)
	o := runJob(t, job)
	require.Equal(t, 0, o.report.ExitCode)
	var wantOut, wantErr strings.Builder
	for i := range 2000 {
		line := fmt.Sprintf("line %d %s\n", i, strings.Repeat("x", i%97))
		if i%2 == 1 {
			wantOut.WriteString(line)
		} else {
			wantErr.WriteString(line)
		}
	}
	require.Equal(t, wantOut.String(), string(o.stdout))
	require.Equal(t, wantErr.String(), string(o.stderr))
	require.Equal(t, int64(wantOut.Len()), o.report.StdoutBytes)
	require.Equal(t, int64(wantErr.Len()), o.report.StderrBytes)
}

func TestOutputIsRelayedLive(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	job := newJob("sh", "-c", `echo first; while [ ! -e "$1" ]; do sleep 0.02; done; echo second`, "sh", gate)
	job.TimeoutMS = 30_000
	p := startInit(t, jobReader(t, job))

	// The child is still running, blocked on the gate: the first line can
	// only have arrived if init relays as it reads.
	typ, payload := p.nextFrame(t)
	require.Equal(t, frame.Stdout, typ)
	require.Equal(t, "first\n", string(payload))
	require.NoError(t, os.WriteFile(gate, nil, 0o644))

	o := p.finish(t)
	require.Equal(t, 0, o.report.ExitCode)
	require.Equal(t, "second\n", string(o.stdout))
	require.Equal(t, int64(len("first\nsecond\n")), o.report.StdoutBytes)
}

func jobReader(t *testing.T, job frame.Job) *bytes.Reader {
	t.Helper()
	b, err := json.Marshal(job)
	require.NoError(t, err)
	return bytes.NewReader(b)
}
