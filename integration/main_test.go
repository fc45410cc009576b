//go:build integration

// Package integration runs the sandbox package against a real Docker engine
// and the real runner image. It fails loudly when Docker or the image is
// missing, unless SANDBOXRUN_SKIP_DOCKER=1 says to skip on purpose.
//
// # Parallel tests
//
// Most of the suite's time is spent waiting on the engine, so a test calls
// t.Parallel() unless it is one of the kinds below; `make integration`
// sets -parallel. Go runs every test that does not call t.Parallel() first,
// one at a time, and only then the parallel ones together, so a serial test
// never overlaps any other. A test stays serial when it
//
//   - counts every container of this process (ownContainers), or checks
//     that a runner's Close left none of them;
//   - reaps (runner.Reap, `sandboxrun reap`), or leaves a sandbox of a dead
//     owner behind on purpose: every sandboxrun process that connects to the
//     engine (each CLI run, serve, mcp) removes the sandboxes of dead
//     owners, so such a test must not overlap any of them;
//   - changes the process's environment or working directory (t.Setenv
//     refuses to run in a parallel test anyway).
//
// What makes the rest safe together: run ids are unique per run, so
// requireNoContainer and eventuallyNoContainers of a run id see only that
// run; skill names a test creates are its own (cliSkill, depsSkill with the
// process id), and skill images are checked by their skill's name
// (requireNoBuildLeftovers); sandboxes of a shared skill (hello from
// ../skills) are counted only among the sandboxrun processes the test
// itself started (requireNoSkillContainers: start such a process with
// cli, startServer or launchMCP, or call trackOwner with its pid). Each
// test writes into its own t.TempDir() and listens on its own loopback
// port.
package integration

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// runner is shared by every test, as one process shares it in production.
var runner *docker.Runner

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if os.Getenv("SANDBOXRUN_SKIP_DOCKER") == "1" {
		fmt.Fprintln(os.Stderr, "integration: SANDBOXRUN_SKIP_DOCKER=1: Docker tests skipped on request")
		return 0
	}
	image := os.Getenv("SANDBOXRUN_IMAGE")
	if image == "" {
		image = sandboxrun.RunnerImage()
	}
	var err error
	// Engine calls get the time a loaded host needs (the default, 30 s,
	// is an operator's setting): a container start past it failed
	// TestForkBombIsContained on a busy machine. A bound here says "the
	// engine did not hang", never how fast it is.
	runner, err = docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(image), warnings(),
		docker.WithCallTimeout(testCallTimeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL:", err)
		return 1
	}
	defer runner.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := runner.Ping(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "integration: FAIL: %v\n(set SANDBOXRUN_SKIP_DOCKER=1 to skip these tests on purpose)\n", err)
		return 1
	}
	if _, err := runner.CheckImage(ctx, image); err != nil {
		fmt.Fprintf(os.Stderr, "integration: FAIL: %v\n", err)
		return 1
	}
	if err := checkDefaultBridge(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL:", err)
		return 1
	}

	code := m.Run()
	removeCLI()
	if err := runner.WaitIdle(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL: wait for background teardowns:", err)
		return 1
	}

	// The suite's own promise: nothing it started is left behind.
	left, err := ownContainers(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL: list containers:", err)
		return 1
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "integration: FAIL: %d sandbox container(s) left behind: %v\n", len(left), left)
		_, _ = runner.Reap(context.Background(), sandbox.ReapOptions{Grace: time.Nanosecond})
		return 1
	}
	return code
}

// checkDefaultBridge fails the suite at once, with the cause, when the
// engine's default bridge network has lost its host interface: every test
// that gives a sandbox or an image build the network would otherwise fail
// with the engine's "could not find bridge docker0". A second dockerd
// started with --bridge none in the host's network namespace deletes
// docker0 (bench/storage-driver.sh runs its engine in a namespace of its own
// for that reason).
func checkDefaultBridge(ctx context.Context) error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	nw, err := cli.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		return fmt.Errorf("inspect the engine's default bridge network: %w", err)
	}
	name := nw.Options["com.docker.network.bridge.name"]
	if name == "" {
		return nil // the engine names no host interface: nothing to check here
	}
	if _, err := net.InterfaceByName(name); err != nil {
		return fmt.Errorf("the engine's default bridge interface %s is missing on this host (%v): "+
			"containers with a network cannot start. Something deleted it (a dockerd started with "+
			"--bridge none in the host's network namespace does); restart the Docker engine to recreate it", name, err)
	}
	return nil
}

// warnings logs a runner's warnings (a failed background removal, say) on
// stderr, where a failing test's output shows them.
func warnings() docker.Option {
	return docker.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// ownContainers lists managed containers created by this test process, in
// any state. Other processes on the host may run sandboxes meanwhile.
func ownContainers(ctx context.Context) ([]string, error) {
	return listContainers(ctx, sandbox.LabelOwnerPID+"="+strconv.Itoa(os.Getpid()))
}

func listContainers(ctx context.Context, label string) ([]string, error) {
	list, err := runner.Client().ContainerList(ctx, container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", sandbox.LabelManaged+"=true"),
			filters.Arg("label", label),
		),
	})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Names...)
	}
	return names, nil
}

// requireNoContainer asserts that nothing is left of a run once d has
// torn it down in the background, after its Result. It waits for that run's
// container alone, not for d.WaitIdle: a runner that parallel tests share
// may never be idle while they run.
func requireNoContainer(t *testing.T, d *docker.Runner, runID string) {
	t.Helper()
	_ = d // the run's teardown is d's, whichever runner it is
	var left []string
	var err error
	deadline := time.Now().Add(2 * time.Minute)
	for {
		left, err = listContainers(context.Background(), sandbox.LabelRunID+"="+runID)
		require.NoError(t, err)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Empty(t, left, "container of run %s left behind", runID)
}

// owners are the pids of the sandboxrun processes each top-level test
// started, by test name.
var owners = struct {
	sync.Mutex
	pids map[string][]int
}{pids: map[string][]int{}}

// trackOwner records that t started the sandboxrun process pid, whose
// sandboxes requireNoSkillContainers then checks.
func trackOwner(t *testing.T, pid int) {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	owners.Lock()
	defer owners.Unlock()
	owners.pids[name] = append(owners.pids[name], pid)
}

// skillContainers lists the sandboxes of skill, in any state, created by
// the sandboxrun processes t (or one of its subtests) started: parallel
// tests, and other suites on the same engine, may run the same skill.
func skillContainers(t *testing.T, skill string) []string {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	owners.Lock()
	pids := slices.Clone(owners.pids[name])
	owners.Unlock()
	list, err := runner.Client().ContainerList(context.Background(), container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", sandbox.LabelManaged+"=true"),
			filters.Arg("label", sandbox.LabelSkill+"="+skill),
		),
	})
	require.NoError(t, err)
	var names []string
	for _, c := range list {
		pid, err := strconv.Atoi(c.Labels[sandbox.LabelOwnerPID])
		if err == nil && slices.Contains(pids, pid) {
			// The state and age say, when a test fails, whether the
			// sandbox was never started, still runs, or was left exited.
			names = append(names, fmt.Sprintf("%s (%s: %s)", strings.Join(c.Names, ","), c.State, c.Status))
		}
	}
	return names
}

// requireNoSkillContainers asserts that no sandbox of skill is left by the
// sandboxrun processes the test started.
func requireNoSkillContainers(t *testing.T, skill string) {
	t.Helper()
	require.Empty(t, skillContainers(t, skill))
}

// eventuallyNoSkillContainers is requireNoSkillContainers for a
// long-running process (the server), which removes a finished run's
// sandbox in the background, after its Result.
func eventuallyNoSkillContainers(t *testing.T, skill string) {
	t.Helper()
	var left []string
	require.Eventually(t, func() bool {
		left = skillContainers(t, skill)
		return len(left) == 0
	}, time.Minute, 50*time.Millisecond, "sandboxes of skill %s left behind: %v", skill, left)
}

// testLimits are small and quick; tests override what they exercise.
func testLimits() policy.Limits {
	return policy.Limits{
		Timeout:     30 * time.Second,
		MemoryBytes: 256 << 20,
		CPUs:        1,
		Pids:        128,
		OutputBytes: 1 << 20,
		TmpBytes:    16 << 20,
	}
}

// newSkill writes a skill folder readable by the sandbox user.
func newSkill(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: t\ndescription: test\n---\n"), 0o644))
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

// pySpec runs inline Python in an empty skill.
func pySpec(t *testing.T, code string) sandbox.Spec {
	t.Helper()
	return sandbox.Spec{
		RunID:    runID(t),
		Skill:    "t",
		SkillDir: newSkill(t, nil),
		Argv:     []string{"python3", "-c", code},
		Runtime:  "python3",
		Limits:   testLimits(),
	}
}

var seq atomic.Int64

// runID is unique per execution and readable in `docker ps`.
func runID(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("it-%d-%d", os.Getpid(), seq.Add(1))
}

// testCallTimeout bounds each engine call of the tests' runner.
const testCallTimeout = 2 * time.Minute

// runHangBound is how long run waits for an execution, its wait for a
// slot among the suite's parallel tests included: a bound against a hang,
// with room for a loaded host. The execution's own timeout is its Limits'.
const runHangBound = 10 * time.Minute

// run executes spec and checks the container is gone afterwards.
func run(t *testing.T, spec sandbox.Spec) *sandbox.Result {
	t.Helper()
	if spec.RunID == "" {
		spec.RunID = runID(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runHangBound)
	defer cancel()
	res, err := runner.Run(ctx, spec)
	require.NoError(t, err)
	require.NotNil(t, res)
	requireNoContainer(t, runner, spec.RunID)
	return res
}

// eventuallyNoContainers asserts that the containers matching label are
// gone within a minute: a long-running process (the server, an MCP host)
// removes a finished run's container in the background, after its Result.
func eventuallyNoContainers(t *testing.T, label string) {
	t.Helper()
	var left []string
	require.Eventually(t, func() bool {
		var err error
		left, err = listContainers(context.Background(), label)
		return err == nil && len(left) == 0
	}, time.Minute, 50*time.Millisecond, "containers %s left behind: %v", label, left)
}
