package engine_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

func newEngine(t *testing.T, d *fakeDriver, warm int) *engine.Engine {
	t.Helper()
	o := sandbox.DefaultOptions("test")
	o.Version = "test"
	o.WarmSize = warm
	o.CallTimeout = 5 * time.Second
	e := engine.New(d, engine.Config{Options: o, Identity: sandbox.IdentityFor(0, 0)})
	t.Cleanup(func() { require.NoError(t, e.Close(context.Background())) })
	return e
}

func spec(t *testing.T) sandbox.Spec {
	t.Helper()
	return sandbox.Spec{Skill: "t", SkillDir: t.TempDir(), Argv: []string{"python3", "-c", "print(1)"},
		Limits: policy.Limits{Timeout: 5 * time.Second, MemoryBytes: 64 << 20, CPUs: 1, Pids: 16, OutputBytes: 1 << 20, TmpBytes: 1 << 20}}
}

type applier struct{}

func (applier) ApplyChanges(context.Context, io.Reader) ([]sandbox.FileChange, error) {
	return nil, nil
}

func TestRunAnswersAndTearsDown(t *testing.T) {
	d := &fakeDriver{}
	e := newEngine(t, d, 0)
	res, err := e.Run(context.Background(), spec(t))
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.Equal(t, "hello\n", res.Stdout)
	require.NoError(t, e.WaitIdle(context.Background()))
	require.Zero(t, d.alive(), "the sandbox is removed once the run is answered")
}

func TestRunAboveHostIsRefusedBeforeStart(t *testing.T) {
	d := &fakeDriver{capacity: sandbox.HostCapacity{CPUs: 2, MemoryBytes: 1 << 30}}
	e := newEngine(t, d, 0)
	for name, edit := range map[string]func(*sandbox.Spec){
		"memory": func(s *sandbox.Spec) { s.Limits.MemoryBytes = 2 << 30 },
		"cpus":   func(s *sandbox.Spec) { s.Limits.CPUs = 4 },
	} {
		t.Run(name, func(t *testing.T) {
			s := spec(t)
			edit(&s)
			res, err := e.Run(context.Background(), s)
			require.ErrorIs(t, err, sandbox.ErrBeyondHost)
			require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
			require.Nil(t, res)
			require.ErrorIs(t, e.CheckSpec(context.Background(), s), sandbox.ErrBeyondHost, "explain refuses what the run refuses")
		})
	}
	require.Zero(t, d.starts.Load(), "nothing started")
}

// A caller that leaves while its sandbox is being made never leaves the
// sandbox behind: the start finishes, and what it made is removed.
func TestCancelledStartLeavesNothing(t *testing.T) {
	d := &fakeDriver{entered: make(chan struct{}), release: make(chan struct{})}
	e := newEngine(t, d, 0)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-d.entered
		cancel() // the caller leaves while the sandbox is made
		close(d.release)
	}()
	res, err := e.Run(ctx, spec(t))
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	require.False(t, res.Success)
	require.EqualValues(t, 1, d.starts.Load())
	require.NoError(t, e.WaitIdle(context.Background()))
	require.Zero(t, d.alive(), "the sandbox made after the caller left is removed")
}

// Closing the engine while the pool makes a warm sandbox leaves nothing:
// the pool's start is not cut short by the close (an engine finishes a
// create whose client left, after a removal by name found nothing), and
// what it made is removed before Close returns.
func TestCloseDuringWarmStartLeavesNothing(t *testing.T) {
	d := &fakeDriver{pooled: true, entered: make(chan struct{}), release: make(chan struct{}), gateAfter: 1}
	o := sandbox.DefaultOptions("test")
	o.Version, o.WarmSize, o.CallTimeout = "test", 1, 5*time.Second
	e := engine.New(d, engine.Config{Options: o, Identity: sandbox.IdentityFor(0, 0)})
	res, err := e.Run(context.Background(), spec(t))
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	<-d.entered // the refill is making a warm sandbox
	closed := make(chan error, 1)
	go func() { closed <- e.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned while a warm start was under way: %v", err)
	case <-time.After(100 * time.Millisecond): // Close has cancelled the pool and waits
	}
	close(d.release)
	require.NoError(t, <-closed)
	require.EqualValues(t, 2, d.starts.Load())
	require.Zero(t, d.alive(), "the warm sandbox made while the engine closed is removed")
}

func TestBackstopKillsAndRemoves(t *testing.T) {
	d := &fakeDriver{hang: true}
	o := sandbox.DefaultOptions("test")
	o.Version, o.BackstopMargin, o.InitGrace = "test", 10*time.Millisecond, 10*time.Millisecond
	e := engine.New(d, engine.Config{Options: o, Identity: sandbox.IdentityFor(0, 0)})
	defer func() { require.NoError(t, e.Close(context.Background())) }()
	s := spec(t)
	s.Limits.Timeout = 100 * time.Millisecond
	res, err := e.Run(context.Background(), s)
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Zero(t, d.alive())
}

// A session run (a writable workspace) takes a warm sandbox like a plain
// run, and its changes come back through the box.
func TestWarmPoolTakesSessionRuns(t *testing.T) {
	d := &fakeDriver{pooled: true}
	e := newEngine(t, d, 1)
	s := spec(t)
	s.Workspace, s.WorkspaceWritable, s.Changes = t.TempDir(), true, applier{}
	for i := range 3 {
		res, err := e.Run(context.Background(), s)
		require.NoError(t, err)
		require.True(t, res.Success, res.Error)
		require.Len(t, res.Files, 1, "run %d handed its changes back", i)
		require.EqualValues(t, 110, res.WorkspaceUsedBytes, "what the workspace held plus what the run wrote")
		if i < 2 {
			require.Eventually(t, func() bool { return e.PoolStats().Ready == 1 }, 5*time.Second, 5*time.Millisecond)
		}
	}
	require.GreaterOrEqual(t, e.PoolStats().Hits, uint64(2), "the second and third runs were warm")
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.started[:2] {
		require.True(t, b.held.Load(), "Bind saw the held workspace")
		require.True(t, b.handed.Load())
	}
}

func TestWritableWorkspaceNeedsChanges(t *testing.T) {
	d := &fakeDriver{}
	e := newEngine(t, d, 0)
	s := spec(t)
	s.Workspace, s.WorkspaceWritable = t.TempDir(), true
	_, err := e.Run(context.Background(), s)
	require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
	require.Zero(t, d.starts.Load())
}

// TestReportWithoutOOMCount: a report that lacks the OOM-kill count has
// the sandbox's end asked; a Reported box answers at once through
// EndReported, and what it says reaches the Result.
func TestReportWithoutOOMCount(t *testing.T) {
	for _, reported := range []bool{false, true} {
		d := &fakeDriver{countless: true, reported: reported}
		e := newEngine(t, d, 0)
		res, err := e.Run(context.Background(), spec(t))
		require.NoError(t, err)
		require.NoError(t, e.WaitIdle(context.Background()))
		require.Len(t, d.started, 1)
		b := d.started[0]
		if !reported {
			require.True(t, res.Success, res.Error)
			require.EqualValues(t, 1, b.ends.Load(), "End says how the sandbox ended")
			continue
		}
		require.Zero(t, b.ends.Load(), "a Reported box is not waited for through End")
		require.True(t, res.OOMKilled, "EndReported's answer reaches the Result")
	}
}
