package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// probe prints what a script can see of how it was started.
const probe = `import atexit, json, os, signal, sys
data = sys.stdin.read()
loader = globals().get("__loader__")
print(json.dumps({
    "globals": list(globals()),
    "name": __name__,
    "file": globals().get("__file__"),
    "cached": repr(globals().get("__cached__", "absent")),
    "loader": getattr(loader, "__name__", type(loader).__name__),
    "spec": repr(__spec__),
    "argv": sys.argv,
    "orig_argv": sys.orig_argv,
    "path": sys.path,
    "modules": sorted(sys.modules),
    "importer_cache": sorted(sys.path_importer_cache),
    "env": dict(os.environ),
    "cwd": os.getcwd(),
    "flags": list(sys.flags),
    "executable": sys.executable,
    "stdio": [sys.stdin.encoding, sys.stdout.encoding, sys.stdout.line_buffering, sys.stdin.read()],
    "signals": [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM, signal.SIGXFSZ)],
    "stdin": data,
}, indent=1))
atexit.register(lambda: print("at exit, __file__ is set:", "__file__" in globals()))
`

// varying is the variable a prestart lets a job differ in, as the run id.
const varying = "RUN_ID"

// pyJob is a job for the system python3 with a run id.
func pyJob(dir string, args ...string) frame.Job {
	job := newJob(append([]string{"python3"}, args...)...)
	job.Dir = dir
	job.Env = append(append([]string(nil), testEnv...), varying+"=job")
	return job
}

// prestartFor is the prestart a host sends ahead of job: the same program,
// environment (but another run id) and directory.
func prestartFor(job frame.Job) frame.Prestart {
	env := make([]string, 0, len(job.Env))
	for _, kv := range job.Env {
		if strings.HasPrefix(kv, varying+"=") {
			kv = varying + "=warm"
		}
		env = append(env, kv)
	}
	return frame.Prestart{Argv0: job.Argv[0], Env: env, Dir: job.Dir, Vary: []string{varying}}
}

func withPrelude(t *testing.T, p frame.Prestart, job frame.Job) []byte {
	t.Helper()
	pre, err := json.Marshal(frame.Prelude{Prestart: &p})
	require.NoError(t, err)
	j, err := json.Marshal(job)
	require.NoError(t, err)
	return append(append(pre, '\n'), j...)
}

// requireSameRun checks that two runs of one job are indistinguishable to
// the host.
func requireSameRun(t *testing.T, fresh, pre outcome) {
	t.Helper()
	require.Equal(t, string(fresh.stdout), string(pre.stdout))
	require.Equal(t, string(fresh.stderr), string(pre.stderr))
	require.Equal(t, fresh.report.ExitCode, pre.report.ExitCode)
	require.Equal(t, fresh.report.Signal, pre.report.Signal)
	require.Equal(t, fresh.report.Error, pre.report.Error)
	require.Equal(t, fresh.report.TimedOut, pre.report.TimedOut)
	require.False(t, fresh.report.Prestarted)
}

func writeFile(t *testing.T, dir, name string, body []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, body, 0o644))
	return p
}

// A job handed to a pre-started interpreter runs as it would in a fresh
// one: same output, same traceback, same exit, same view of its start.
func TestPrestartedRunsLikeAFreshStart(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "probe.py", []byte(probe))
	writeFile(t, dir, "real/target.py", []byte(probe))
	require.NoError(t, os.Symlink(filepath.Join(dir, "real/target.py"), filepath.Join(dir, "link.py")))
	writeFile(t, dir, "chained.py", []byte(`
def f():
    try:
        {}["k"]
    except KeyError as e:
        raise ValueError("bad") from e
print("before", flush=True)
f()
`))
	writeFile(t, dir, "syntax.py", []byte("x = (\n"))
	writeFile(t, dir, "exit3.py", []byte("import sys\nprint('out')\nsys.exit(3)\n"))
	writeFile(t, dir, "exitmsg.py", []byte("import sys\nsys.exit('a message')\n"))
	writeFile(t, dir, "segv.py", []byte("import os, signal\nprint('x', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n"))
	writeFile(t, dir, "warn.py", []byte("import warnings\nwarnings.warn('careful')\n"))
	writeFile(t, dir, "latin1.py", []byte("# -*- coding: latin-1 -*-\nprint('caf\xe9')\n"))
	writeFile(t, dir, "bom.py", []byte("\xef\xbb\xbfprint('bom')\n"))
	writeFile(t, dir, "child.py", []byte("import subprocess\nprint(subprocess.check_output(['/usr/bin/env']).decode())\n"))
	writeFile(t, dir, "excepthook.py", []byte("import sys\nsys.excepthook = lambda t, v, tb: print('hook:', t.__name__, tb.tb_frame.f_code.co_filename, file=sys.stderr)\nraise RuntimeError('x')\n"))
	writeFile(t, dir, "dir/placeholder", nil)
	var app bytes.Buffer
	zw := zip.NewWriter(&app)
	w, err := zw.Create("__main__.py")
	require.NoError(t, err)
	_, err = w.Write([]byte("import sys\nprint('zipapp', sys.argv)\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	writeFile(t, dir, "app.py", app.Bytes())

	tests := []struct {
		name  string
		args  []string
		stdin string
		// handed: the job goes to the pre-started interpreter, which then
		// either runs it itself or execs the command as init would.
		handed bool
	}{
		{"a script sees a fresh start", []string{"probe.py", "a", "b"}, `{"x": 1}`, true},
		{"by absolute path", []string{filepath.Join(dir, "probe.py")}, "", true},
		{"through a symlink", []string{"link.py"}, "", true},
		{"a relative path, not normalised", []string{"real/../probe.py"}, "", true},
		{"a dot path", []string{"./probe.py"}, "", true},
		{"code on stdin", []string{"-", "arg"}, probe, true},
		{"a chained traceback", []string{"chained.py"}, "", true},
		{"a syntax error", []string{"syntax.py"}, "", true},
		{"sys.exit(3)", []string{"exit3.py"}, "", true},
		{"sys.exit with a message", []string{"exitmsg.py"}, "", true},
		{"death by signal", []string{"segv.py"}, "", true},
		{"a warning names the script", []string{"warn.py"}, "", true},
		{"a source encoding", []string{"latin1.py"}, "", true},
		{"a byte-order mark", []string{"bom.py"}, "", true},
		{"children get the job's environment", []string{"child.py"}, "", true},
		{"the script's own excepthook", []string{"excepthook.py"}, "", true},
		{"a zip application (exec'd)", []string{"app.py", "z"}, "", true},
		{"a folder without __main__ (exec'd)", []string{"dir"}, "", true},
		{"a missing script (exec'd)", []string{"missing.py"}, "", true},
		{"-c (exec'd)", []string{"-c", "import sys; print(sys.argv, sys.path[0])", "x"}, "", true},
		{"an option (exec'd)", []string{"-u", "probe.py"}, "", true},
		{"-I keeps the environment out (exec'd)", []string{"-I", "probe.py"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := pyJob(dir, tt.args...)
			job.Stdin = []byte(tt.stdin)
			fresh := runJob(t, job)
			pre := runRaw(t, withPrelude(t, prestartFor(job), job))
			requireSameRun(t, fresh, pre)
			require.Equal(t, tt.handed, pre.report.Prestarted)
		})
	}
}

// The emulated path really ran in the pre-started interpreter: its command
// line is the loader's, the one thing a script can see differently.
func TestPrestartedRunsTheScriptItself(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "cmdline.py", []byte("print(open('/proc/self/cmdline', 'rb').read().split(b'\\0')[1].decode())\n"))
	job := pyJob(dir, "cmdline.py")
	o := runRaw(t, withPrelude(t, prestartFor(job), job))
	require.Empty(t, o.stderr)
	require.Equal(t, "-c\n", string(o.stdout), "the loader's command line")
	require.True(t, o.report.Prestarted)
	require.Equal(t, "cmdline.py\n", string(runJob(t, job).stdout))
}

// A job that would not start the same interpreter the same way is started
// anew; the pre-started one is discarded and nothing of it counts.
func TestPrestartNotUsed(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "env.py", []byte("import json, os\nprint(json.dumps(dict(os.environ)))\n"))
	base := pyJob(dir, "env.py")
	tests := []struct {
		name   string
		modify func(*frame.Job, *frame.Prestart)
	}{
		{"a variable the interpreter did not start with", func(j *frame.Job, _ *frame.Prestart) {
			j.Env = append(j.Env, "PYTHONDONTWRITEBYTECODE=1")
		}},
		{"a variable that may not vary", func(j *frame.Job, p *frame.Prestart) { p.Vary = nil }},
		{"another value of LANG", func(j *frame.Job, _ *frame.Prestart) { j.Env[1] = "LANG=C" }},
		{"another directory", func(j *frame.Job, _ *frame.Prestart) { j.Dir = "/"; j.Argv[1] = filepath.Join(dir, "env.py") }},
		{"another program", func(j *frame.Job, _ *frame.Prestart) {
			j.Argv = []string{"sh", "-c", "echo {}"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := base
			job.Argv = append([]string(nil), base.Argv...)
			job.Env = append([]string(nil), base.Env...)
			p := prestartFor(job)
			tt.modify(&job, &p)
			fresh := runJob(t, job)
			pre := runRaw(t, withPrelude(t, p, job))
			requireSameRun(t, fresh, pre)
			require.False(t, pre.report.Prestarted)
		})
	}

	t.Run("the discarded interpreter's use is not the job's", func(t *testing.T) {
		// The interpreter burns CPU and memory while it starts (as a .pth
		// hook of a skill image could); the job that replaces it must not
		// be charged for them.
		site := t.TempDir()
		writeFile(t, site, "sitecustomize.py", []byte(`
import time
hog = bytearray(64 << 20)
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
`))
		marker := fmt.Sprintf("SANDBOX_INIT_TEST_MARK=%d", time.Now().UnixNano())
		p := prestartFor(pyJob(dir))
		p.Env = append(p.Env, "PYTHONPATH="+site, marker)
		pre, err := json.Marshal(frame.Prelude{Prestart: &p})
		require.NoError(t, err)
		job := newJob("/bin/true")
		j, err := json.Marshal(job)
		require.NoError(t, err)

		r, w, err := os.Pipe()
		require.NoError(t, err)
		t.Cleanup(func() { r.Close(); w.Close() })
		proc := startInit(t, r)
		_, err = w.Write(pre)
		require.NoError(t, err)
		waitForJob(t, marker)
		_, err = w.Write(j)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		o := proc.finish(t)
		require.False(t, o.report.Prestarted)
		require.Zero(t, o.report.ExitCode)
		require.Less(t, o.report.UserCPUMS+o.report.SystemCPUMS, int64(150), "true's CPU time, not the interpreter's 300 ms")
		require.Less(t, o.report.PeakRSSKB, int64(48<<10), "true's memory, not the interpreter's 64 MiB")
	})
}

// waitForJob waits until the pre-started interpreter whose environment
// holds marker has started and waits for its job: it reads fd 3.
func waitForJob(t *testing.T, marker string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, pid := range processesWith(marker) {
			b, err := os.ReadFile(filepath.Join("/proc", pid, "syscall"))
			if f := strings.Fields(string(b)); err == nil && len(f) > 1 && f[0] == "0" && f[1] == "0x3" {
				return true // read(3, ...)
			}
		}
		return false
	}, 20*time.Second, 5*time.Millisecond)
}

// The run id varies between the warm container and its job: the script
// and its children see the job's.
func TestPrestartedSeesTheJobsEnvironment(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "env.py", []byte("import os, subprocess\nprint(os.environ['RUN_ID'], subprocess.check_output(['/bin/sh', '-c', 'echo $RUN_ID']).decode().strip())\n"))
	job := pyJob(dir, "env.py")
	o := runRaw(t, withPrelude(t, prestartFor(job), job))
	require.True(t, o.report.Prestarted)
	require.Equal(t, "job job\n", string(o.stdout), "stderr: %s", o.stderr)
}

// The timeout covers a pre-started job from the moment the job arrived:
// the job comes once the interpreter waits for it, and longer than the
// timeout after the prestart, so a clock started by the prestart would
// kill the script before it says "up". The script has the whole timeout
// to start, which a loaded host needs.
func TestPrestartedTimesOut(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "sleep.py", []byte("import time\nprint('up', flush=True)\ntime.sleep(60)\n"))
	job := pyJob(dir, "sleep.py")
	marker := fmt.Sprintf("SANDBOX_INIT_TEST_MARK=%d", time.Now().UnixNano())
	job.Env = append(job.Env, marker)
	job.TimeoutMS, job.GraceMS = 1500, 100
	both := withPrelude(t, prestartFor(job), job)
	cut := bytes.IndexByte(both, '\n') + 1
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	proc := startInit(t, r)
	_, err = w.Write(both[:cut])
	require.NoError(t, err)
	waitForJob(t, marker)
	time.Sleep(time.Duration(job.TimeoutMS+100) * time.Millisecond)
	_, err = w.Write(both[cut:])
	require.NoError(t, err)
	require.NoError(t, w.Close())
	o := proc.finish(t)
	require.True(t, o.report.Prestarted)
	require.True(t, o.report.TimedOut)
	require.Equal(t, int(syscall.SIGTERM), o.report.Signal)
	require.Equal(t, "up\n", string(o.stdout))
}

func TestPreludeErrors(t *testing.T) {
	job := pyJob("/", "-c", "print('ran')")
	good, err := json.Marshal(job)
	require.NoError(t, err)
	tests := []struct {
		name    string
		prelude string
		ran     bool
		says    string
	}{
		{"only python3", `{"prestart":{"argv0":"node","env":["PATH=/usr/bin"],"cwd":"/"}}`, true, ""},
		{"not found", `{"prestart":{"argv0":"python3","env":["PATH=/nonexistent"],"cwd":"/"}}`, true, ""},
		{"no such directory", `{"prestart":{"argv0":"python3","env":["PATH=/usr/bin"],"cwd":"/nonexistent"}}`, true, ""},
		{"NUL in the environment", `{"prestart":{"argv0":"python3","env":["PATH=/usr/bin","A=\u0000"],"cwd":"/"}}`, true, ""},
		{"an unknown field", `{"prestart":{"argv0":"python3","env":[],"cwd":"/","privileged":true}}`, false, "unknown field"},
		{"two preludes", `{"prestart":null}{"prestart":null}`, false, "a second prelude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := runRaw(t, append([]byte(tt.prelude), good...))
			require.False(t, o.report.Prestarted)
			if tt.ran {
				require.Empty(t, o.report.Error)
				require.Equal(t, "ran\n", string(o.stdout))
				return
			}
			require.ErrorContains(t, fmt.Errorf("%s", o.report.Error), tt.says)
			require.Empty(t, o.stdout)
		})
	}
}

// A warm container stopped before its job leaves no interpreter behind.
func TestPrestartedStoppedBeforeTheJob(t *testing.T) {
	marker := fmt.Sprintf("SANDBOX_INIT_TEST_MARK=%d", time.Now().UnixNano())
	p := frame.Prestart{Argv0: "python3", Env: append(append([]string(nil), testEnv...), marker), Dir: "/"}
	pre, err := json.Marshal(frame.Prelude{Prestart: &p})
	require.NoError(t, err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	proc := startInit(t, r)
	_, err = w.Write(pre)
	require.NoError(t, err)
	waitForJob(t, marker) // the interpreter starts before the job
	require.NoError(t, proc.cmd.Process.Signal(syscall.SIGTERM))
	o := proc.finish(t)
	require.ErrorContains(t, fmt.Errorf("%s", o.report.Error), "terminated")
	require.Empty(t, processesWith(marker), "the pre-started interpreter was killed and reaped")
}

// processesWith lists the pids whose environment holds kv.
func processesWith(kv string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append(b, 0), []byte(kv+"\x00")) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
