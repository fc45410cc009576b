package docker

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// pool is the engine's warm pool, nil when it is off.
func (d *Runner) pool() *warm.Pool[engine.Box] { return d.eng.Pool() }

// keyOf is the pool key a run of spec gets with usr and, for a writable
// workspace, a view or not.
func (d *Runner) keyOf(spec *sandbox.Spec, usr usrMount, view bool) string {
	p := &plan{usr: usr, ws: wsPlan{view: view, size: spec.Limits.WorkspaceWriteBytes}}
	return d.key(spec, p)
}

// echoInit reports the run id it was given, so a test can tell which
// container served which run.
type echoInit struct {
	mu   sync.Mutex
	jobs []frame.Job
}

func (e *echoInit) run(job frame.Job, out, _ io.Writer, _ <-chan struct{}) {
	e.mu.Lock()
	e.jobs = append(e.jobs, job)
	e.mu.Unlock()
	for _, kv := range job.Env {
		if v, ok := strings.CutPrefix(kv, "SANDBOXRUN_RUN_ID="); ok {
			_ = frame.Write(out, frame.Stdout, []byte(v))
		}
	}
	report(out, frame.Report{})
}

func waitIdle(t *testing.T, d *Runner, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return d.pool().Snapshot().IdleCount() == n }, 30*time.Second, time.Millisecond)
}

func TestWarmPoolServesTheNextRun(t *testing.T) {
	e := &echoInit{}
	f := &fakeClient{init: e.run}
	d := newTestDocker(t, f, WithWarmPool(1, time.Minute))
	spec := testSpec(t)

	first, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, first.Success)
	waitIdle(t, d, 1)
	require.Equal(t, 2, countCalls(f.Calls(), "create"), "one for the run, one warm")

	require.Equal(t, first.ID, f.RunIDs()[0])
	warm := f.RunIDs()[1]

	second, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, second.Success)
	require.Equal(t, warm, second.ID, "the run used the warm container and is named after it")
	require.Equal(t, warm, second.Stdout, "the script saw the same run id")
	waitIdle(t, d, 1)
	require.Equal(t, 3, countCalls(f.Calls(), "create"), "the second run created only the next warm one")
	require.Equal(t, sandbox.PoolStats{Size: 1, Ready: 1, Hits: 1, Misses: 1}, d.PoolStats(), "the first run missed, the second hit")

	require.NoError(t, d.Close())
	require.Zero(t, f.Live(), "Close removes idle containers")
}

func TestWarmPoolKeepsTheCallersRunID(t *testing.T) {
	e := &echoInit{}
	f := &fakeClient{init: e.run}
	d := newTestDocker(t, f, WithWarmPool(1, time.Minute))
	spec := testSpec(t)
	_, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	waitIdle(t, d, 1)

	spec.RunID = "caller-chosen"
	res, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, "caller-chosen", res.ID)
	require.Equal(t, "caller-chosen", res.Stdout)
	require.NoError(t, d.Close())
}

func TestWarmPoolMatchesOnlyIdenticalConfigurations(t *testing.T) {
	e := &echoInit{}
	f := &fakeClient{init: e.run}
	d := newTestDocker(t, f, WithWarmPool(4, time.Minute))
	spec := testSpec(t)
	_, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	waitIdle(t, d, 4)

	other := spec
	other.Limits.MemoryBytes *= 2
	require.NotEqual(t, d.keyOf(&spec, usrMount{}, false), d.keyOf(&other, usrMount{}, false))
	warm := f.RunIDs()[1]
	res, err := d.Run(context.Background(), other)
	require.NoError(t, err)
	require.NotEqual(t, warm, res.ID, "other limits never use this warm container")
	require.Contains(t, f.RunIDs(), res.ID, "it got a container of its own")

	// What only the job carries does not split the pool.
	same := spec
	same.Env = map[string]string{"X": "1"}
	same.Stdin = []byte("other args")
	same.Argv = []string{"node", "x.js"}
	same.Limits.Timeout = time.Second
	require.Equal(t, d.keyOf(&spec, usrMount{}, false), d.keyOf(&same, usrMount{}, false))
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

func TestWarmPoolExpiresIdleContainers(t *testing.T) {
	f := &fakeClient{init: (&echoInit{}).run}
	d := newTestDocker(t, f, WithWarmPool(1, 20*time.Millisecond))
	_, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	// The run's own container is removed at once; the refill created after
	// it must expire and be removed too. Waiting on the count, not only on
	// "nothing live", keeps the check from passing before the refill exists.
	require.Eventually(t, func() bool {
		return countCalls(f.Calls(), "remove") == 2 && f.Live() == 0 && d.pool().Snapshot().IdleCount() == 0
	}, 30*time.Second, time.Millisecond)
	require.NoError(t, d.Close())
}

func TestWarmPoolSkipsDeadContainers(t *testing.T) {
	f := &fakeClient{init: (&echoInit{}).run}
	d := newTestDocker(t, f, WithWarmPool(1, time.Minute))
	spec := testSpec(t)
	_, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	waitIdle(t, d, 1)

	// Something killed the idle container (a reaper, the engine).
	f.mu.Lock()
	var dead *fakeContainer
	for _, c := range f.containers {
		dead = c
	}
	f.mu.Unlock()
	dead.stop()
	require.Eventually(t, func() bool {
		for _, l := range d.pool().Snapshot().Idle {
			for _, b := range l {
				return !b.Alive()
			}
		}
		return false
	}, 30*time.Second, time.Millisecond)

	warm := f.RunIDs()[1]
	res, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, res.Success)
	require.NotEqual(t, warm, res.ID, "a dead warm container is not used")
	require.NoError(t, d.Close())
	require.Contains(t, f.Removed(), "c0ffee000002", "it is removed")
	require.Zero(t, f.Live())
}

func TestWarmPoolOff(t *testing.T) {
	f := &fakeClient{init: (&echoInit{}).run}
	d := newTestDocker(t, f)
	require.Nil(t, d.pool())
	_, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	settled(t, d)
	require.Equal(t, 1, countCalls(f.Calls(), "create"))
	require.Zero(t, f.Live())
	require.Equal(t, sandbox.PoolStats{}, d.PoolStats(), "no pool, nothing counted")
	require.NoError(t, d.Close())
}

// A warm container is started once the run that used the pool has its
// Result, never while its script runs.
func TestWarmPoolRefillsAfterTheResult(t *testing.T) {
	running := make(chan struct{}, 1)
	release := make(chan struct{})
	f := &fakeClient{init: func(job frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		if job.Argv == nil {
			return // a warm container removed at Close, never given a job
		}
		running <- struct{}{}
		<-release
		report(out, frame.Report{})
	}}
	d := newTestDocker(t, f, WithWarmPool(1, time.Minute))
	spec := testSpec(t)
	for i, wantCreates := range []int{1, 2} {
		done := make(chan error, 1)
		go func() {
			_, err := d.Run(context.Background(), spec)
			done <- err
		}()
		<-running
		require.Equal(t, wantCreates, countCalls(f.Calls(), "create"), "run %d: nothing started while the script runs", i)
		release <- struct{}{}
		require.NoError(t, <-done)
		waitIdle(t, d, 1)
		require.Equal(t, wantCreates+1, countCalls(f.Calls(), "create"), "run %d: refilled after the result", i)
	}
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

// After each run the pool holds its configured number of containers for
// that configuration, whether the run was warm or cold.
func TestWarmPoolKeepsItsSize(t *testing.T) {
	f := &fakeClient{init: (&echoInit{}).run}
	d := newTestDocker(t, f, WithWarmPool(3, time.Minute))
	spec := testSpec(t)
	for i := range 4 {
		res, err := d.Run(context.Background(), spec)
		require.NoError(t, err)
		require.True(t, res.Success)
		waitIdle(t, settled(t, d), 3)
		require.Equal(t, 1+3+i, countCalls(f.Calls(), "create"), "run %d", i)
	}
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

// A warm container for a configuration last run with python3 starts it
// ahead of its job, with the skill's environment and none of the caller's.
func TestWarmPoolPrestartsPython(t *testing.T) {
	tests := []struct {
		name     string
		argv0    string
		opts     []Option
		prestart bool
	}{
		{"python3", "python3", nil, true},
		{"another program", "node", nil, false},
		{"turned off", "python3", []Option{WithPrestart(false)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{init: (&echoInit{}).run}
			d := newTestDocker(t, f, append([]Option{WithWarmPool(1, time.Minute)}, tt.opts...)...)
			spec := testSpec(t)
			spec.Argv[0] = tt.argv0
			spec.SkillVersion = "2.0"
			spec.Env = map[string]string{"API_TOKEN": "secret of this request"}
			_, err := d.Run(context.Background(), spec)
			require.NoError(t, err)
			waitIdle(t, d, 1)
			preludes := f.Preludes()
			if !tt.prestart {
				require.Empty(t, preludes)
				require.NoError(t, d.Close())
				return
			}
			// The fake's init reads its stdin on its own goroutine: the
			// prelude may be parsed just after the container counts as idle.
			require.Eventually(t, func() bool { return len(f.Preludes()) == 1 }, 30*time.Second, time.Millisecond)
			preludes = f.Preludes()
			warm := f.RunIDs()[1]
			tmpl := sandbox.Spec{RunID: warm, Skill: spec.Skill, SkillVersion: "2.0"}
			require.Equal(t, frame.Prestart{
				Argv0: "python3", Env: sandbox.ScriptEnv(&tmpl, "0.1.0-test"), Dir: "/workspace", Vary: []string{"SANDBOXRUN_RUN_ID"},
			}, preludes[0])
			for _, kv := range preludes[0].Env {
				require.NotContains(t, kv, "secret", "nothing of one request reaches a container for another")
			}
			require.NoError(t, d.Close())
			require.Zero(t, f.Live())
		})
	}
}

// A run that finds no idle container waits for the one already starting
// instead of asking the engine for another; if that start fails, it starts
// its own.
func TestWarmPoolWaitsForAStartingContainer(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("start fails %v", fail), func(t *testing.T) {
			gate := make(chan struct{})
			f := &fakeClient{init: (&echoInit{}).run, startHook: func(n int) error {
				if n != 2 {
					return nil
				}
				<-gate // the refill after the first run
				if fail {
					return errTest
				}
				return nil
			}}
			d := newTestDocker(t, f, WithWarmPool(1, time.Minute))
			spec := testSpec(t)
			_, err := d.Run(context.Background(), spec)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return countCalls(f.Calls(), "start") == 2 }, 30*time.Second, time.Millisecond)

			type outcome struct {
				res *sandbox.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := d.Run(context.Background(), spec)
				done <- outcome{res, err}
			}()
			require.Eventually(t, func() bool {
				return d.pool().Snapshot().Waiting == 1
			}, 5*time.Second, time.Millisecond, "the second run waits")
			require.Equal(t, 2, countCalls(f.Calls(), "create"), "and asks for no container of its own")
			close(gate)
			o := <-done
			require.NoError(t, o.err)
			res := o.res
			require.True(t, res.Success)
			if fail {
				require.Equal(t, f.RunIDs()[2], res.ID, "a container of its own after the failed start")
			} else {
				require.Equal(t, f.RunIDs()[1], res.ID, "the container that was starting")
			}
			require.NoError(t, d.Close())
			require.Zero(t, f.Live())
		})
	}
}

// A run whose context ends while it waits gives up, and the container it
// waited for goes to the next run.
func TestWarmPoolWaitEndsWithTheContext(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeClient{init: (&echoInit{}).run, startHook: func(n int) error {
		if n == 2 {
			<-gate
		}
		return nil
	}}
	d := newTestDocker(t, f, WithWarmPool(1, time.Minute))
	spec := testSpec(t)
	_, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countCalls(f.Calls(), "start") == 2 }, 30*time.Second, time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := d.Run(ctx, spec)
		errc <- err
	}()
	require.Eventually(t, func() bool {
		return d.pool().Snapshot().Waiting == 1
	}, 30*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	close(gate)
	waitIdle(t, d, 1)
	res, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, f.RunIDs()[1], res.ID, "the next run got it")
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}
