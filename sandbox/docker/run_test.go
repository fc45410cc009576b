package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func newTestDocker(t *testing.T, f *fakeClient, opts ...Option) *Runner {
	t.Helper()
	d, err := New(append([]Option{WithClient(f), WithVersion("0.1.0-test")}, opts...)...)
	require.NoError(t, err)
	d.ids = sandbox.IdentityFor(1000, 1000) // a non-root caller: no host files to share
	return d
}

// settled waits for the runner's background work (teardowns, refills) and
// returns d, so tests can check the engine calls of a whole run.
func settled(t *testing.T, d *Runner) *Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, d.WaitIdle(ctx))
	return d
}

func testSpec(t *testing.T) sandbox.Spec {
	return sandbox.Spec{
		Skill:    "hello",
		SkillDir: t.TempDir(),
		Argv:     []string{"python3", "/skills/hello/scripts/echo.py"},
		Runtime:  "python3",
		Stdin:    []byte(`{"n": 1}`),
		Limits: policy.Limits{Timeout: 5 * time.Second, MemoryBytes: 64 << 20, CPUs: 1, Pids: 64,
			OutputBytes: 1 << 20, TmpBytes: 16 << 20},
	}
}

func TestRunSuccess(t *testing.T) {
	var got frame.Job
	f := &fakeClient{init: func(job frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		got = job
		_ = frame.Write(out, frame.Stdout, []byte(`{"ok": true}`))
		_ = frame.Write(out, frame.Stderr, []byte("note\n"))
		report(out, frame.Report{StdoutBytes: 12, StderrBytes: 5, UserCPUMS: 3, PeakRSSKB: 1000})
	}}
	d := newTestDocker(t, f)
	var live bytes.Buffer
	spec := testSpec(t)
	spec.Stdout = &live
	spec.Env = map[string]string{"MARKER": "1"}

	res, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	settled(t, d)
	require.True(t, res.Success)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, `{"ok": true}`, res.Stdout)
	require.Equal(t, `{"ok": true}`, string(res.Output))
	require.Equal(t, "note\n", res.Stderr)
	require.Equal(t, `{"ok": true}`, live.String(), "output relayed live")
	require.Equal(t, int64(1000), res.PeakRSSKB)
	require.Equal(t, "sandboxrun/runner:0.1.0-test", res.Image)
	require.Equal(t, "sha256:feed", res.ImageID, "asked of the engine while the script ran")
	require.Len(t, res.ID, 16)
	require.Empty(t, res.Error)

	require.Equal(t, []string{"create", "attach", "start", "inspect", "wait", "remove"}, f.Calls(),
		"the container is removed once it has stopped on its own")
	require.Equal(t, spec.Argv, got.Argv)
	require.Equal(t, []byte(`{"n": 1}`), got.Stdin)
	require.Contains(t, got.Env, "SANDBOXRUN_RUN_ID="+res.ID)
	require.Contains(t, got.Env, "MARKER=1")
	require.Equal(t, int64(5000), got.TimeoutMS)
	require.Equal(t, int64(2000), got.GraceMS)
	require.Equal(t, "1000:1000", f.cfg.User)
	require.Equal(t, res.ID, f.cfg.Labels[sandbox.LabelRunID])
}

func TestRunScriptFailureIsNotAnError(t *testing.T) {
	f := &fakeClient{init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		_ = frame.Write(out, frame.Stderr, []byte("Traceback\n"))
		report(out, frame.Report{ExitCode: 1})
	}}
	d := newTestDocker(t, f)
	res, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.False(t, res.Success)
	require.Equal(t, 1, res.ExitCode)
	require.Equal(t, "Traceback\n", res.Stderr)
	settled(t, d)
	require.Len(t, f.Removed(), 1)
}

// The count of OOM kills in the sandbox's memory cgroup decides, and the
// Result is complete without waiting for the container to stop.
func TestRunOOMFromReport(t *testing.T) {
	one, zero := int64(1), int64(0)
	tests := []struct {
		name string
		rep  frame.Report
		// the engine's flag, which the count makes irrelevant
		engineOOM bool
		want      bool
	}{
		{"killed by the OOM killer", frame.Report{ExitCode: -1, Signal: 9, OOMKills: &one}, false, true},
		{"the engine's flag is not asked", frame.Report{ExitCode: -1, Signal: 9, OOMKills: &one}, false, true},
		{"a SIGKILL near the limit is not an OOM when the count says none",
			frame.Report{ExitCode: -1, Signal: 9, PeakRSSKB: 63 << 10, OOMKills: &zero}, true, false},
		{"a child killed, the script exits 0", frame.Report{ExitCode: 0, OOMKills: &one}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{
				state: container.State{OOMKilled: tt.engineOOM, Running: true},
				init:  func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) { reportAsIs(out, tt.rep) },
			}
			d := newTestDocker(t, f)
			res, err := d.Run(context.Background(), testSpec(t))
			require.NoError(t, err)
			require.Equal(t, tt.want, res.OOMKilled)
			require.Equal(t, !tt.want && tt.rep.Signal == 0, res.Success)
			if tt.rep.Signal == 9 {
				require.Equal(t, -9, res.ExitCode)
				require.Equal(t, "SIGKILL", res.Signal)
			}
			settled(t, d)
			require.Equal(t, []string{"create", "attach", "start", "inspect", "wait", "remove"}, f.Calls(),
				"one inspect, for the image, while the script ran; no wait for the container to stop")
		})
	}
}

// An init that predates the count: the engine's final state decides, as
// before, and the heuristic for engines that miss a non-PID-1 victim holds.
func TestRunOOMFromInspectForAnOlderInit(t *testing.T) {
	f := &fakeClient{
		state: container.State{OOMKilled: true, Running: true},
		init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
			reportAsIs(out, frame.Report{ExitCode: -1, Signal: 9})
		},
	}
	d := newTestDocker(t, f)
	res, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.OOMKilled)
	require.Equal(t, -9, res.ExitCode)
	require.Equal(t, "SIGKILL", res.Signal)
	settled(t, d)
	require.Equal(t, []string{"create", "attach", "start", "inspect", "inspect", "wait", "inspect", "remove"}, f.Calls(),
		"a container still marked running is waited for before its final state is read, and goes without another wait")

	f = &fakeClient{init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		reportAsIs(out, frame.Report{ExitCode: -1, Signal: 9, PeakRSSKB: 60 << 10})
	}}
	res, err = newTestDocker(t, f).Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.OOMKilled, "SIGKILL at 60 of 64 MiB without a count")
}

// cancelDuringCreate is an engine that finishes a create the caller gave
// up on while it ran, as a real engine may.
type cancelDuringCreate struct {
	*fakeClient
	cancel context.CancelFunc
}

func (c *cancelDuringCreate) ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig,
	nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	c.cancel()
	return c.fakeClient.ContainerCreate(ctx, cfg, hc, nc, p, name)
}

// A run cancelled while its container is being created removes the
// container the engine made, by its id: the create is not cut short, so
// no container appears after the run has gone.
func TestRunCancelledDuringCreate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeClient{}
	d, err := New(WithClient(&cancelDuringCreate{fakeClient: f, cancel: cancel}), WithVersion("0.1.0-test"))
	require.NoError(t, err)
	d.ids = sandbox.IdentityFor(1000, 1000)
	_, err = d.Run(ctx, testSpec(t))
	require.ErrorIs(t, err, context.Canceled)
	settled(t, d)
	require.Equal(t, []string{"create", "remove"}, f.Calls(), "nothing started")
	removed := f.Removed()
	require.Len(t, removed, 1)
	require.Contains(t, removed[0], "c0ffee", "removed by the id the engine gave")
}

// Every path after a create that may have made a container removes it.
func TestRunRemovesOnEveryPath(t *testing.T) {
	unavailable := client.ErrorConnectionFailed("unix:///nowhere.sock") //nolint:staticcheck // the only way to build the client's own error
	tests := []struct {
		name      string
		f         *fakeClient
		wantErr   error
		wantCalls []string
		removed   string
	}{
		{
			name:      "image missing",
			f:         &fakeClient{createErr: errNotFound},
			wantErr:   sandbox.ErrImageNotFound,
			wantCalls: []string{"create", "remove"},
			removed:   "sandboxrun-",
		},
		{
			name:      "daemon unreachable",
			f:         &fakeClient{createErr: unavailable},
			wantErr:   ErrUnavailable,
			wantCalls: []string{"create", "remove"},
			removed:   "sandboxrun-",
		},
		{
			name:      "partial create",
			f:         &fakeClient{createErr: errTest, createID: "abc123"},
			wantErr:   errTest,
			wantCalls: []string{"create", "remove"},
			removed:   "abc123",
		},
		{
			name:      "attach fails",
			f:         &fakeClient{attachErr: errTest},
			wantErr:   errTest,
			wantCalls: []string{"create", "attach", "remove"},
			removed:   "c0ffee",
		},
		{
			name:      "start fails",
			f:         &fakeClient{startErr: errTest},
			wantErr:   errTest,
			wantCalls: []string{"create", "attach", "start", "remove"},
			removed:   "c0ffee",
		},
		{
			name: "inspect fails for an older init",
			f: &fakeClient{inspectErr: errTest, init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
				reportAsIs(out, frame.Report{})
			}},
			wantErr:   errTest,
			wantCalls: []string{"create", "attach", "start", "inspect", "inspect", "remove"},
			removed:   "c0ffee",
		},
		{
			name:      "no report",
			f:         &fakeClient{state: container.State{ExitCode: 2}, init: func(frame.Job, io.Writer, io.Writer, <-chan struct{}) {}},
			wantErr:   sandbox.ErrNoReport,
			wantCalls: []string{"create", "attach", "start", "inspect", "inspect", "remove"},
			removed:   "c0ffee",
		},
		{
			name: "corrupt stream",
			f: &fakeClient{init: func(_ frame.Job, out, _ io.Writer, killed <-chan struct{}) {
				_, _ = out.Write([]byte{9, 0xff, 0xff, 0xff, 0xff})
				<-killed
			}},
			wantErr:   frame.ErrTooLarge,
			wantCalls: []string{"create", "attach", "start", "inspect", "kill", "inspect", "remove"},
			removed:   "c0ffee",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestDocker(t, tt.f)
			res, err := d.Run(context.Background(), testSpec(t))
			require.ErrorIs(t, err, tt.wantErr)
			require.NotNil(t, res)
			require.NotEmpty(t, res.Error)
			settled(t, d)
			require.Equal(t, tt.wantCalls, tt.f.Calls())
			removed := tt.f.Removed()
			require.Len(t, removed, 1)
			require.Contains(t, removed[0], tt.removed)
		})
	}
}

func TestRunImageNotFoundSaysHowToBuild(t *testing.T) {
	_, err := newTestDocker(t, &fakeClient{createErr: errNotFound}).Run(context.Background(), testSpec(t))
	require.ErrorContains(t, err, "sandboxrun images build")
	require.ErrorContains(t, err, "make images")
	require.ErrorContains(t, err, "sandboxrun/runner:0.1.0-test")
}

// A container whose init reported is removed once it has stopped, so the
// engine need not kill it; one that does not stop within the grace is
// removed (killed) all the same.
func TestRunRemovalWaitsForTheExitBriefly(t *testing.T) {
	f := &fakeClient{waitBlocks: true, init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		report(out, frame.Report{})
	}}
	d := newTestDocker(t, f, WithInitGrace(20*time.Millisecond))
	res, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.Success)
	settled(t, d)
	require.Equal(t, []string{"create", "attach", "start", "inspect", "wait", "remove"}, f.Calls())
	require.Zero(t, f.Live())
}

func TestRunRemovalErrors(t *testing.T) {
	ok := func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) { report(out, frame.Report{}) }
	t.Run("already gone is tolerated", func(t *testing.T) {
		var logs bytes.Buffer
		d := newTestDocker(t, &fakeClient{removeErr: errNotFound, init: ok}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		res, err := d.Run(context.Background(), testSpec(t))
		require.NoError(t, err)
		require.True(t, res.Success)
		settled(t, d)
		require.Empty(t, logs.String())
	})
	t.Run("after the result, other failures are logged", func(t *testing.T) {
		var logs bytes.Buffer
		f := &fakeClient{removeErr: errTest, init: ok}
		d := newTestDocker(t, f, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		res, err := d.Run(context.Background(), testSpec(t))
		require.NoError(t, err, "the Result was complete before the removal")
		require.True(t, res.Success)
		settled(t, d)
		require.Equal(t, 2, countCalls(f.Calls(), "remove"), "tried twice")
		require.Contains(t, logs.String(), "remove sandbox container")
		require.Contains(t, logs.String(), errTest.Error())
	})
	t.Run("a container that stopped while it was killed goes at the second try", func(t *testing.T) {
		var logs bytes.Buffer
		notRunning := errors.New("Could not kill running container c0ffee, cannot remove - Container c0ffee is not running")
		f := &fakeClient{removeErrOnce: notRunning, init: ok}
		d := newTestDocker(t, f, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		res, err := d.Run(context.Background(), testSpec(t))
		require.NoError(t, err)
		require.True(t, res.Success)
		settled(t, d)
		require.Equal(t, 2, countCalls(f.Calls(), "remove"))
		require.Zero(t, f.Live())
		require.Empty(t, logs.String())
	})
	t.Run("without a result, they are returned", func(t *testing.T) {
		f := &fakeClient{removeErr: errTest, state: container.State{ExitCode: 2},
			init: func(frame.Job, io.Writer, io.Writer, <-chan struct{}) {}}
		_, err := newTestDocker(t, f).Run(context.Background(), testSpec(t))
		require.ErrorIs(t, err, sandbox.ErrNoReport)
		require.ErrorIs(t, err, errTest)
		require.ErrorContains(t, err, "remove sandbox container")
	})
}

// The Result comes before the container is removed; WaitIdle and Close
// wait for the removal.
func TestRunAnswersBeforeTheTeardown(t *testing.T) {
	f := &fakeClient{removeGate: make(chan struct{}), init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		_ = frame.Write(out, frame.Stdout, []byte("done"))
		report(out, frame.Report{})
	}}
	d := newTestDocker(t, f)
	res, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.Equal(t, "done", res.Stdout)
	require.Equal(t, 1, f.Live(), "the container is still there")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, d.WaitIdle(ctx), context.Canceled, "the removal is still running")

	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	require.Eventually(t, func() bool { return countCalls(f.Calls(), "remove") == 1 }, 30*time.Second, time.Millisecond)
	select {
	case <-closed:
		t.Fatal("Close returned while a removal was held")
	default:
	}
	close(f.removeGate)
	require.NoError(t, <-closed)
	require.Zero(t, f.Live())
}

// At most WithMaxConcurrent removals wait in the background; past that a
// run removes its own container before it returns.
func TestRunTeardownsAreBounded(t *testing.T) {
	f := &fakeClient{removeGate: make(chan struct{}), init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		report(out, frame.Report{})
	}}
	d := newTestDocker(t, f, WithMaxConcurrent(1))
	_, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err, "the first teardown goes to the background")

	second := make(chan error, 1)
	go func() {
		_, err := d.Run(context.Background(), testSpec(t))
		second <- err
	}()
	require.Eventually(t, func() bool { return countCalls(f.Calls(), "remove") == 2 }, 30*time.Second, time.Millisecond)
	select {
	case <-second:
		t.Fatal("the second run returned while its own removal was held")
	default:
	}
	close(f.removeGate)
	require.NoError(t, <-second)
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

func TestRunCancelledMidRun(t *testing.T) {
	started := make(chan struct{})
	f := &fakeClient{init: func(_ frame.Job, out, _ io.Writer, killed <-chan struct{}) {
		_ = frame.Write(out, frame.Stdout, []byte("partial"))
		close(started)
		<-killed
	}}
	d := newTestDocker(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()

	res, err := d.Run(ctx, testSpec(t))
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	require.Contains(t, res.Error, "cancelled")
	require.Equal(t, "partial", res.Stdout)
	require.False(t, res.Success)
	require.Equal(t, []string{"create", "attach", "start", "inspect", "kill", "remove"}, f.Calls(),
		"removed before Run returned")
	require.Len(t, f.Removed(), 1, "removal ran although the context was cancelled")
}

func TestRunBackstop(t *testing.T) {
	f := &fakeClient{init: func(_ frame.Job, _, _ io.Writer, killed <-chan struct{}) { <-killed }}
	d := newTestDocker(t, f, WithInitGrace(10*time.Millisecond), WithBackstopMargin(10*time.Millisecond))
	spec := testSpec(t)
	spec.Limits.Timeout = 20 * time.Millisecond

	res, err := d.Run(context.Background(), spec)
	require.NoError(t, err, "a sandbox that hangs is the script's failure, reported in the result")
	require.True(t, res.TimedOut)
	require.Equal(t, sandbox.ExitTimeout, res.ExitCode)
	require.Equal(t, "sandbox-init did not report in time", res.Error)
	require.Contains(t, res.Stderr, "Timeout: script exceeded 20ms limit")
	require.Equal(t, []string{"create", "attach", "start", "inspect", "kill", "inspect", "remove"}, f.Calls())
}

func TestRunJobNotReadDoesNotDeadlock(t *testing.T) {
	// The container never reads its stdin: writing a large job must not
	// block the host.
	f := &fakeClient{ignoreStdin: true, init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		report(out, frame.Report{})
	}}
	spec := testSpec(t)
	spec.Stdin = bytes.Repeat([]byte("x"), 5<<20)
	res, err := newTestDocker(t, f).Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, res.Success)
}

func TestRunRefusalsMakeNoDockerCall(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*sandbox.Spec)
		wantErr error
	}{
		{"invalid", func(s *sandbox.Spec) { s.Argv = nil }, sandbox.ErrInvalidSpec},
		{"skill dir missing", func(s *sandbox.Spec) { s.SkillDir = "/nonexistent/skill" }, sandbox.ErrInvalidSpec},
		{"workspace missing", func(s *sandbox.Spec) { s.Workspace = "/nonexistent/ws" }, sandbox.ErrInvalidSpec},
		{"skill dir is a file", func(s *sandbox.Spec) { s.SkillDir = os.Args[0] }, sandbox.ErrInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{}
			spec := testSpec(t)
			tt.mutate(&spec)
			res, err := newTestDocker(t, f).Run(context.Background(), spec)
			require.ErrorIs(t, err, tt.wantErr)
			require.Nil(t, res)
			require.Empty(t, f.Calls())
		})
	}
}

func TestRunWaitsForASlot(t *testing.T) {
	release := make(chan struct{})
	running := make(chan struct{})
	var once sync.Once
	f := &fakeClient{init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		once.Do(func() { close(running) })
		<-release
		report(out, frame.Report{})
	}}
	d := newTestDocker(t, f, WithMaxConcurrent(1))

	first := make(chan error, 1)
	go func() {
		_, err := d.Run(context.Background(), testSpec(t))
		first <- err
	}()
	<-running

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := d.Run(ctx, testSpec(t))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "wait for a free sandbox slot")
	require.Nil(t, res)
	require.Equal(t, 1, countCalls(f.Calls(), "create"), "the waiting run created nothing")

	close(release)
	require.NoError(t, <-first)
}

func countCalls(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func TestNewDockerOptions(t *testing.T) {
	_, err := New(WithClient(&fakeClient{}))
	require.ErrorContains(t, err, "WithVersion")
	_, err = New(WithClient(&fakeClient{}), WithVersion("1"), WithMaxConcurrent(0), WithInitGrace(-1))
	require.ErrorContains(t, err, "max concurrent")
	require.ErrorContains(t, err, "init grace")
	d, err := New(WithClient(&fakeClient{}), WithDefaultImage("custom:1"))
	require.NoError(t, err)
	require.Equal(t, "custom:1", d.Image())
	require.NoError(t, d.Close())
}
