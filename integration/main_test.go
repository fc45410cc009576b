//go:build integration

// Package integration runs the sandbox package against a real Docker engine
// and the real runner image. It fails loudly when Docker or the image is
// missing, unless SANDBOXRUN_SKIP_DOCKER=1 says to skip on purpose.
package integration

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	runner, err = docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(image), warnings())
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

// requireNoContainer asserts that nothing is left of a run once d's
// background work (the teardown of runs that have their Result) is done.
func requireNoContainer(t *testing.T, d *docker.Runner, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, d.WaitIdle(ctx))
	left, err := listContainers(context.Background(), sandbox.LabelRunID+"="+runID)
	require.NoError(t, err)
	require.Empty(t, left, "container of run %s left behind", runID)
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

// run executes spec and checks the container is gone afterwards.
func run(t *testing.T, spec sandbox.Spec) *sandbox.Result {
	t.Helper()
	if spec.RunID == "" {
		spec.RunID = runID(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
