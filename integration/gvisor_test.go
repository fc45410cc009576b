//go:build integration

package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// TestCoreCasesUnderGVisor runs the battery's core cases with the sandbox
// under gVisor (runsc) when the engine has it registered (`make runsc`):
// arguments in, output and exit status out, timeout, signals, the output
// cap, and the isolation a sandbox promises (identity, capabilities,
// read-only root, no network). An engine without runsc skips it, saying how
// to register it, unless SANDBOXRUN_TEST_RUNSC=1 (make test-runsc) expects
// it: then it fails.
func TestCoreCasesUnderGVisor(t *testing.T) {
	t.Parallel()
	requireRunsc(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d, err := docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(runner.Image()),
		docker.WithOCIRuntime("runsc"))
	require.NoError(t, err)
	defer d.Close()
	gvisor := func(t *testing.T, spec sandbox.Spec) *sandbox.Result {
		t.Helper()
		if spec.RunID == "" {
			spec.RunID = runID(t)
		}
		res, err := d.Run(ctx, spec)
		require.NoError(t, err)
		requireNoContainer(t, d, spec.RunID)
		return res
	}

	t.Run("a skill script with JSON on stdin and argv", func(t *testing.T) {
		skillDir, err := filepath.Abs("../skills/hello")
		require.NoError(t, err)
		res := gvisor(t, sandbox.Spec{
			Skill: "hello", SkillDir: skillDir, Runtime: "python3", Limits: testLimits(),
			Argv:  []string{"python3", "/skills/hello/scripts/echo.py", "--flag", "two words"},
			Stdin: []byte(`{"greeting": "hi"}`),
		})
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		require.JSONEq(t, `{"skill": "hello", "runtime": "python", "args": {"greeting": "hi"}}`, string(res.Output))
	})
	t.Run("argv reaches the program exactly", func(t *testing.T) {
		spec := pySpec(t, `import sys, json; print(json.dumps(sys.argv[1:]))`)
		spec.Argv = append(spec.Argv, "a b", "$(id)", "")
		res := gvisor(t, spec)
		require.True(t, res.Success, res.Stderr)
		require.JSONEq(t, `["a b", "$(id)", ""]`, string(res.Output))
	})
	t.Run("exit status", func(t *testing.T) {
		res := gvisor(t, pySpec(t, `import sys; sys.stderr.write("bad\n"); sys.exit(3)`))
		require.Equal(t, 3, res.ExitCode)
		require.Equal(t, "bad\n", res.Stderr)
	})
	t.Run("timeout of a script ignoring SIGTERM", func(t *testing.T) {
		spec := pySpec(t, "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('started', flush=True)\nwhile True: time.sleep(0.05)\n")
		spec.Limits.Timeout = 2 * time.Second
		res := gvisor(t, spec)
		require.True(t, res.TimedOut, "%+v", res)
		require.Equal(t, sandbox.ExitTimeout, res.ExitCode)
		require.Equal(t, "started\n", res.Stdout)
	})
	t.Run("death by signal", func(t *testing.T) {
		res := gvisor(t, pySpec(t, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
		require.Equal(t, "SIGKILL", res.Signal)
		require.Equal(t, -9, res.ExitCode)
	})
	t.Run("output cap", func(t *testing.T) {
		spec := pySpec(t, `import sys; sys.stdout.write("x" * 300000)`)
		spec.Limits.OutputBytes = 1000
		res := gvisor(t, spec)
		require.True(t, res.StdoutTruncated)
		require.Len(t, res.Stdout, 1000)
		require.EqualValues(t, 300000, res.StdoutBytes)
	})
	t.Run("isolation", func(t *testing.T) {
		res := gvisor(t, pySpec(t, `
import os, socket
print(os.getuid(), os.getgid())
print([l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])
print(sorted(name for _, name in socket.if_nameindex()))
for path in ("/usr/x", "/skills/t/x", "/tmp/x"):
    try:
        open(path, "w").close()
        print(path, "writable")
    except OSError:
        print(path, "read-only")
`))
		require.True(t, res.Success, res.Stderr)
		lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
		require.Equal(t, []string{
			"65532 65532", "0000000000000000", "['lo']",
			"/usr/x read-only", "/skills/t/x read-only", "/tmp/x writable",
		}, lines)
	})
}
