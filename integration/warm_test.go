//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// newWarmRunner is a runner with a warm pool of one (python3 pre-started).
func newWarmRunner(t *testing.T) *docker.Runner {
	t.Helper()
	warm, err := docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(runner.Image()),
		docker.WithWarmPool(1, time.Minute), warnings())
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, warm.Close())
		left, err := ownContainers(context.Background())
		require.NoError(t, err)
		require.Empty(t, left, "Close removed the idle warm containers")
	})
	return warm
}

// runWarm runs spec (with the runner naming the run) and waits for the
// pool to be refilled, as between an agent's calls.
func runWarm(t *testing.T, d *docker.Runner, spec sandbox.Spec) *sandbox.Result {
	t.Helper()
	spec.RunID = ""
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := d.Run(ctx, spec)
	require.NoError(t, err)
	requireNoContainer(t, d, res.ID)
	return res
}

// Each warm container serves one job: a job finds nothing another job
// left, in files, environment, interpreter state or processes, also when
// both ran in interpreters started ahead of them.
func TestWarmRunsShareNothing(t *testing.T) {
	// Serial (see main_test.go): newWarmRunner counts every container of this process.
	warm := newWarmRunner(t)
	spec := pySpec(t, `
import json, os, subprocess, sys
leave = sys.argv[1] == "leave"
cmdline = open("/proc/self/cmdline", "rb").read().split(b"\0")
state = {
    "prestarted": cmdline[1] == b"-c",
    # Every sandbox is named sandbox; the engine's per-container folder,
    # where /etc/hostname comes from, tells containers apart.
    "container": [l.split()[3] for l in open("/proc/self/mountinfo") if l.split()[4] == "/etc/hostname"],
    "run_id": os.environ["SANDBOXRUN_RUN_ID"],
    "tmp": os.path.exists("/tmp/left-behind"),
    "shm": os.path.exists("/dev/shm/left-behind"),
    "env": "LEFT_BEHIND" in os.environ,
    "module": hasattr(json, "left_behind"),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()),
}
if leave:
    open("/tmp/left-behind", "w").write("x")
    open("/dev/shm/left-behind", "w").write("x")
    os.environ["LEFT_BEHIND"] = "1"
    json.left_behind = True
    subprocess.Popen(["sleep", "60"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps(state))
`)
	run := func(mode string) map[string]any {
		s := spec
		s.Argv = append(append([]string(nil), spec.Argv...), mode)
		res := runWarm(t, warm, s)
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var state map[string]any
		require.NoError(t, json.Unmarshal(res.Output, &state), "stdout: %q", res.Stdout)
		require.Equal(t, res.ID, state["run_id"])
		return state
	}
	run("check") // a cold run fills the pool
	first := run("leave")
	second := run("check")
	require.Equal(t, true, first["prestarted"], "the job ran in a pre-started interpreter")
	require.Equal(t, true, second["prestarted"])
	require.NotEmpty(t, first["container"])
	require.NotEqual(t, first["container"], second["container"], "another container")
	require.NotEqual(t, first["run_id"], second["run_id"])
	for _, k := range []string{"tmp", "shm", "env", "module"} {
		require.Equal(t, false, second[k], k)
	}
	require.Equal(t, []any{float64(1)}, second["pids"], "only sandbox-init besides the job: no process of another job")
}

// What a script sees of its start, and an uncaught exception, are the
// same in a pre-started interpreter as in a fresh one, in the runner image.
func TestWarmPrestartedLikeCold(t *testing.T) {
	// Serial (see main_test.go): newWarmRunner counts every container of this process.
	warm := newWarmRunner(t)
	spec := pySpec(t, `
import json, os, sys
env = dict(os.environ)
env.pop("SANDBOXRUN_RUN_ID")
print(json.dumps({
    "globals": sorted(globals()), "file": __file__, "argv": sys.argv, "orig_argv": sys.orig_argv,
    "path": sys.path, "modules": sorted(sys.modules), "env": env, "cwd": os.getcwd(),
    "executable": sys.executable, "stdin": sys.stdin.read(),
}))
def fail():
    raise ValueError("from the script")
fail()
`)
	spec.Stdin = []byte(`{"a": 1}`)
	// As a script file, the way run passes one.
	spec.SkillDir = newSkill(t, map[string]string{"scripts/probe.py": strings.Join(spec.Argv[2:], "")})
	spec.Argv = []string{"python3", "/skills/t/scripts/probe.py", "x"}

	cold := run(t, spec)
	runWarm(t, warm, spec) // fills the pool
	hot := runWarm(t, warm, spec)
	require.Equal(t, 1, cold.ExitCode)
	require.Equal(t, cold.ExitCode, hot.ExitCode)
	require.Equal(t, cold.Stdout, hot.Stdout)
	require.Equal(t, cold.Stderr, hot.Stderr)
	require.Contains(t, cold.Stderr, `File "/skills/t/scripts/probe.py", line 12, in <module>`)
}

// warmIdle is the idle window the default-server tests give, so that they
// see the pool empty itself without waiting minutes.
const warmIdle = "3s"

// TestWarmServeByDefault: a `sandboxrun serve` with no pool flag answers a
// configuration's second run from a warm container, and once that
// configuration has been idle for the window it holds no container.
func TestWarmServeByDefault(t *testing.T) {
	const name = "srv-warm-default"
	srv := startServer(t, serverSkill(t, name), "--warm-idle", warmIdle)
	for range 2 {
		resp, body := srv.post(t, "/v1/skills/"+name+"/run", `{"script": "scripts/echo.py", "args": {}}`)
		require.Equal(t, 200, resp.StatusCode, string(body))
	}
	metrics := func() string {
		resp, err := http.Get(srv.url + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	text := metrics()
	require.Contains(t, text, "sandboxrun_warm_pool_size 4", "on, with the default cap")
	require.Contains(t, text, "sandboxrun_warm_pool_misses_total 1", "the first run was cold")
	require.Contains(t, text, "sandboxrun_warm_pool_hits_total 1", "the second was warm")

	skill := sandbox.LabelSkill + "=" + name
	require.Eventually(t, func() bool {
		left, err := listContainers(context.Background(), skill)
		return err == nil && len(left) > 0
	}, 30*time.Second, 50*time.Millisecond, "a warm container waits for the next run")
	eventuallyNoContainers(t, skill)
	require.Contains(t, metrics(), "sandboxrun_warm_pool_ready 0", "idle past the window: nothing held")
}

// TestWarmMCPStdioByDefault: a `sandboxrun mcp` with no pool flag answers a
// tool call's second run in the warm container it started after the first
// (the run is named after it), and holds none once idle for the window.
func TestWarmMCPStdioByDefault(t *testing.T) {
	s := startMCP(t, "--warm-idle", warmIdle)
	call := func() mcp.RunOutput {
		res := s.call(t, mcp.ToolRunScript, map[string]any{"skill": "hello", "script": "scripts/echo.py", "args_json": `{"n": 1}`})
		require.False(t, res.IsError, mcptest.Text(res))
		var out mcp.RunOutput
		decodeTool(t, res, &out)
		require.True(t, out.Success)
		return out
	}
	first := call()
	var warm []string
	require.Eventually(t, func() bool {
		warm = s.containers(t)
		return len(warm) == 1 && !strings.Contains(warm[0], first.ID)
	}, 30*time.Second, 50*time.Millisecond, "a warm container waits for the next call")

	second := call()
	require.Contains(t, warm[0], second.ID, "the second call ran in the warm container")
	s.requireNoContainers(t) // idle past the window, while the server runs
	require.Nil(t, s.cmd.ProcessState, "the server still runs")
}
