//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

func TestConcurrentRuns(t *testing.T) {
	// Serial (see main_test.go): counts every container of this process.
	const n = 16
	var wg sync.WaitGroup
	results := make([]*sandbox.Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := pySpec(t, `import json, sys; a = json.load(sys.stdin); print(json.dumps({"i": a["i"] * 2}))`)
			spec.Stdin = []byte(fmt.Sprintf(`{"i": %d}`, i))
			results[i], errs[i] = runner.Run(context.Background(), spec)
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "run %d", i)
		require.True(t, results[i].Success, "run %d: %s", i, results[i].Stderr)
		require.JSONEq(t, fmt.Sprintf(`{"i": %d}`, 2*i), string(results[i].Output), "each run gets its own output")
	}
	require.NoError(t, runner.WaitIdle(context.Background()))
	left, err := ownContainers(context.Background())
	require.NoError(t, err)
	require.Empty(t, left)
}

// signalWriter closes ready at the first write.
type signalWriter struct {
	once  sync.Once
	ready chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ready) })
	return len(p), nil
}

func TestCancellationMidRunLeavesNoContainer(t *testing.T) {
	t.Parallel()
	spec := pySpec(t, `
import time
print("running", flush=True)
time.sleep(60)
`)
	started := &signalWriter{ready: make(chan struct{})}
	spec.Stdout = started
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-started.ready:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	begin := time.Now()
	res, err := runner.Run(ctx, spec)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	require.Equal(t, "running\n", res.Stdout)
	require.Contains(t, res.Error, "cancelled")
	require.Less(t, time.Since(begin), 30*time.Second)
	requireNoContainer(t, runner, spec.RunID)
}

// TestRefusalsCreateNoContainer watches the engine's events: a refused spec
// must not even create a container.
func TestRefusalsCreateNoContainer(t *testing.T) {
	t.Parallel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer cli.Close()

	tests := []struct {
		name   string
		mutate func(*sandbox.Spec)
	}{
		{"reserved env", func(s *sandbox.Spec) { s.Env = map[string]string{"PATH": "/evil"} }},
		{"oversized arguments", func(s *sandbox.Spec) { s.Stdin = make([]byte, sandbox.MaxStdinBytes+1) }},
		{"relative skill dir", func(s *sandbox.Spec) { s.SkillDir = "skills/t" }},
		{"missing workspace", func(s *sandbox.Spec) { s.Workspace = "/nonexistent/workspace" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := pySpec(t, `print(1)`)
			tt.mutate(&spec)
			creates := watchCreates(t, cli, spec.RunID)
			res, err := runner.Run(context.Background(), spec)
			require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
			require.Nil(t, res)
			require.Zero(t, creates(), "no container was created")
		})
	}
	// The watcher itself sees creates.
	spec := pySpec(t, `print(1)`)
	creates := watchCreates(t, cli, spec.RunID)
	run(t, spec)
	require.Equal(t, 1, creates())
}

func TestEngineRefusalIsInvalidSpec(t *testing.T) {
	t.Parallel()
	spec := pySpec(t, `print(1)`)
	spec.Limits.CPUs = 1000 // more than any host here
	res, err := runner.Run(context.Background(), spec)
	require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
	require.ErrorIs(t, err, docker.ErrBeyondHost)
	require.ErrorContains(t, err, "CPUs")
	require.Nil(t, res, "refused before any container, from the engine's Info")
	requireNoContainer(t, runner, spec.RunID)
}

// watchCreates counts container create events for one run id until the
// returned function is called.
func watchCreates(t *testing.T, cli *client.Client, runID string) func() int {
	t.Helper()
	since := time.Now()
	return func() int {
		until := time.Now().Add(200 * time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		msgs, errc := cli.Events(ctx, events.ListOptions{
			Since: fmt.Sprint(since.Unix()),
			Until: fmt.Sprint(until.Unix() + 1),
			Filters: filters.NewArgs(
				filters.Arg("type", "container"),
				filters.Arg("event", "create"),
				filters.Arg("label", sandbox.LabelRunID+"="+runID),
			),
		})
		n := 0
		for {
			select {
			case <-msgs:
				n++
			case err := <-errc:
				if err != nil && !errors.Is(err, io.EOF) {
					require.NoError(t, err)
				}
				return n
			}
		}
	}
}

func TestWarmPool(t *testing.T) {
	// Serial (see main_test.go): counts every container of this process.
	warm, err := docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(runner.Image()),
		docker.WithWarmPool(2, time.Minute), warnings())
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			warm.Close()
		}
	}()

	spec := pySpec(t, `import json, os, sys; print(json.dumps({"id": os.environ["SANDBOXRUN_RUN_ID"], "args": json.load(sys.stdin)}))`)
	seen := map[string]bool{}
	for i := range 4 {
		s := spec
		s.RunID = "" // let warm containers name the runs
		s.Stdin = []byte(fmt.Sprintf(`{"i": %d}`, i))
		res, err := warm.Run(context.Background(), s)
		require.NoError(t, err)
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var out struct {
			ID   string
			Args map[string]int
		}
		require.NoError(t, json.Unmarshal(res.Output, &out))
		require.Equal(t, res.ID, out.ID)
		require.Equal(t, i, out.Args["i"], "each run gets its own job")
		require.False(t, seen[res.ID], "a container serves one run only")
		seen[res.ID] = true
		requireNoContainer(t, warm, res.ID) // and the pool has refilled, as between an agent's calls
	}
	require.NoError(t, warm.Close())
	closed = true
	left, err := ownContainers(context.Background())
	require.NoError(t, err)
	require.Empty(t, left, "Close removed the idle warm containers")
}
