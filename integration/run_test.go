//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestSuccessWithSkillScript(t *testing.T) {
	t.Parallel()
	skillDir, err := filepath.Abs("../skills/hello")
	require.NoError(t, err)
	res := run(t, sandbox.Spec{
		Skill:    "hello",
		SkillDir: skillDir,
		Argv:     []string{"python3", "/skills/hello/scripts/echo.py"},
		Runtime:  "python3",
		Stdin:    []byte(`{"greeting": "hi"}`),
		Limits:   testLimits(),
	})
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, 0, res.ExitCode)
	require.JSONEq(t, `{"skill": "hello", "runtime": "python", "args": {"greeting": "hi"}}`, string(res.Output))
	require.Empty(t, res.Error)
	require.Empty(t, res.Signal)
	require.Positive(t, res.DurationMS)
	require.Positive(t, res.PeakRSSKB)
	require.Equal(t, runner.Image(), res.Image)
	require.NotEmpty(t, res.ImageID)
}

// The conformance suite (sandboxtest.OutOfMemory) covers a script past its
// limit; here a child is killed and the script itself survives.
func TestOOMOfAChild(t *testing.T) {
	t.Parallel()
	// Only the memory cgroup's own count, reported by sandbox-init, sees
	// this one: the script survives its child and exits 0, and the Result
	// comes without the engine being asked about the stopped container.
	spec := pySpec(t, `
import subprocess, sys
r = subprocess.run([sys.executable, "-c", "c = []\nwhile True: c.append(b'x' * (4 << 20))"])
print(r.returncode)
`)
	spec.Limits.MemoryBytes = 64 << 20
	res := run(t, spec)
	require.Equal(t, "-9\n", res.Stdout, "the child was killed")
	require.Equal(t, 0, res.ExitCode)
	require.True(t, res.OOMKilled, "result: %+v", res)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "out of memory")
}

func TestForkBombIsContained(t *testing.T) {
	t.Parallel()
	t.Run("forks stop at the pids limit", func(t *testing.T) {
		spec := pySpec(t, `
import os, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print(n)
`)
		spec.Limits.Pids = 32
		spec.Limits.Timeout = 20 * time.Second
		res := run(t, spec)
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var forks int
		require.NoError(t, json.Unmarshal(res.Output, &forks))
		require.Positive(t, forks)
		require.Less(t, forks, 32)
	})
	t.Run("a shell fork bomb ends and the host carries on", func(t *testing.T) {
		spec := pySpec(t, "")
		spec.Argv = []string{"bash", "-c", `bomb() { bomb | bomb & }; bomb; sleep 30`}
		spec.Limits.Pids = 64
		spec.Limits.Timeout = 3 * time.Second
		res := run(t, spec)
		// Cut at its timeout, not at the end of its sleep: the script's
		// own time, which a busy host's container start does not count
		// in (run bounds the whole against a hang).
		require.True(t, res.TimedOut, "result: %+v", res)
		require.Contains(t, res.Stderr, "Timeout:")
		// The orchestrator still runs sandboxes.
		require.True(t, run(t, pySpec(t, `print("alive")`)).Success)
	})
}

func TestNonUTF8Output(t *testing.T) {
	t.Parallel()
	res := run(t, pySpec(t, `import sys; sys.stdout.buffer.write(b"ok \xff\xfe end\n"); sys.stderr.buffer.write(b"\xc3(")`))
	require.True(t, res.Success)
	require.Equal(t, "ok \ufffd\ufffd end\n", res.Stdout)
	require.Equal(t, "\ufffd(", res.Stderr)
	require.True(t, utf8.ValidString(res.Stdout))
	require.Equal(t, int64(10), res.StdoutBytes)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.True(t, utf8.Valid(b))
}

func TestLargeArgumentsNeverRead(t *testing.T) {
	t.Parallel()
	spec := pySpec(t, `print("done")`)
	spec.Stdin = []byte(`{"blob": "` + strings.Repeat("a", 5<<20) + `"}`)
	res := run(t, spec)
	// Stdin nobody reads blocks nothing: the script ends by itself, well
	// before its timeout (a stuck hand-over of stdin would end there);
	// how fast the whole run is on a busy host is the bench's business.
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.False(t, res.TimedOut)
	require.Equal(t, "done\n", res.Stdout)

	// And read in full by one that does.
	spec = pySpec(t, `import sys; print(len(sys.stdin.buffer.read()))`)
	spec.Stdin = []byte(strings.Repeat("b", 5<<20))
	res = run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "5242880\n", res.Stdout)
}

func TestEnvironment(t *testing.T) {
	// Serial (see main_test.go): t.Setenv changes the process's environment.
	t.Setenv("SANDBOXRUN_HOST_MARKER", "leaked")
	spec := pySpec(t, `import json, os; print(json.dumps(dict(os.environ)))`)
	spec.SkillVersion = "1.2.3"
	spec.Env = map[string]string{"GREETING": "hi"}
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	var env map[string]string
	require.NoError(t, json.Unmarshal(res.Output, &env))
	require.Equal(t, map[string]string{
		"SKILL_NAME":         "t",
		"SKILL_VERSION":      "1.2.3",
		"SKILL_BASE_DIR":     "/skills/t",
		"SKILL_DIR":          "/skills/t",
		"SCRIPTS_DIR":        "/skills/t/scripts",
		"SANDBOXRUN_VERSION": "0.1.0",
		"SANDBOXRUN_RUN_ID":  spec.RunID,
		"PATH":               sandbox.VenvDir + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME":               "/tmp",
		"LANG":               "C.UTF-8",
		"GREETING":           "hi",
	}, env, "exactly what sandboxrun sets plus the caller's: nothing from the host")
	require.Equal(t, "leaked", os.Getenv("SANDBOXRUN_HOST_MARKER"))
}
