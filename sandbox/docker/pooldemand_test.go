package docker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// fakeClock is a clock a test moves by hand, safe for the pool's
// goroutines to read.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newDemandDocker is a fake runner with a pool sized by demand, capped at
// max, on a fake clock.
func newDemandDocker(t *testing.T, f *fakeClient, max int, maxIdle time.Duration) (*Runner, *fakeClock) {
	t.Helper()
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	d := newTestDocker(t, f, WithWarmPoolByDemand(max, maxIdle))
	d.now = c.now
	return d, c
}

// slowStarts makes every container start take a while, so that runs
// outpace the refills, as they do on a real engine.
func slowStarts(int) error {
	time.Sleep(5 * time.Millisecond)
	return nil
}

// gatedStarts holds every container start until the test lets one through
// (or closes the gate), so that the test decides what each run finds.
func gatedStarts(gate chan struct{}) func(int) error {
	return func(int) error {
		<-gate
		return nil
	}
}

// grow makes n serial runs of spec, each finding no container ready (every
// start is held) and getting the one start the test lets through: the
// cold start of the first run, and for each later one the warm container
// it waits for.
func grow(t *testing.T, d *Runner, spec sandbox.Spec, gate chan struct{}, n int) {
	t.Helper()
	for range n {
		done := make(chan error, 1)
		go func() {
			_, err := d.Run(context.Background(), spec)
			done <- err
		}()
		// With starts under way, let one through only once the run waits
		// for it: let through sooner, it would be ready when the run
		// comes. With none, the run's own start is the one held.
		require.Eventually(t, func() bool {
			snap := d.pool().Snapshot()
			starting := 0
			for _, c := range snap.Held {
				starting += c.Starting
			}
			return snap.Waiting == 1 || starting == 0
		}, 30*time.Second, time.Millisecond)
		gate <- struct{}{}
		require.NoError(t, <-done)
		require.LessOrEqual(t, d.PoolStats().Ready, d.PoolStats().Size)
	}
}

func TestDemandPoolFirstRunColdSecondWarm(t *testing.T) {
	f := &fakeClient{init: (&echoInit{}).run}
	d, _ := newDemandDocker(t, f, 4, time.Minute)
	spec := testSpec(t)

	first, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	waitIdle(t, settled(t, d), 1)
	require.Equal(t, sandbox.PoolStats{Size: 4, Ready: 1, Misses: 1}, d.PoolStats(), "cold, then one warm for the next run")
	require.Equal(t, first.ID, f.RunIDs()[0])

	second, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, f.RunIDs()[1], second.ID, "the warm container served it")
	require.Equal(t, uint64(1), d.PoolStats().Hits)
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

// Serial runs that outpace the starts find none ready, and the pool grows
// run by run up to its cap, never past it.
func TestDemandPoolGrowsWithDemandWithinTheCap(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeClient{init: (&echoInit{}).run, startHook: gatedStarts(gate)}
	d, _ := newDemandDocker(t, f, 4, time.Minute)
	spec := testSpec(t)
	var ready []int
	for range 7 {
		grow(t, d, spec, gate, 1)
		ready = append(ready, d.PoolStats().Ready)
	}
	require.Equal(t, []int{1, 2, 3, 4, 4, 4, 4}, ready, "one more after each run that found none ready, up to the cap")
	close(gate)
	waitIdle(t, settled(t, d), 4)
	st := d.PoolStats()
	require.Equal(t, sandbox.PoolStats{Size: 4, Ready: 4, Hits: 6, Misses: 1}, st, "every run after the first got a warm container")
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

// The cap is shared: a second configuration gets its container by removing
// one the first holds beyond its share, and the pool never holds more than
// the cap.
func TestDemandPoolRespectsTheTotalCap(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeClient{init: (&echoInit{}).run, startHook: gatedStarts(gate)}
	d, _ := newDemandDocker(t, f, 3, time.Minute)
	a := testSpec(t)
	b := a
	b.Limits.MemoryBytes *= 2
	grow(t, d, a, gate, 4)
	close(gate)
	waitIdle(t, settled(t, d), 3)
	var keyA string
	for k := range d.pool().Snapshot().Idle {
		keyA = k
	}
	removed := countCalls(f.Calls(), "remove")

	for range 2 {
		_, err := d.Run(context.Background(), b)
		require.NoError(t, err)
		require.LessOrEqual(t, d.PoolStats().Ready, 3)
		settled(t, d)
	}
	held := d.pool().Snapshot().Held
	require.Len(t, held, 2)
	for k, c := range held {
		if k == keyA {
			require.Equal(t, warm.Count{Idle: 2}, c, "one was taken from the first configuration")
		} else {
			require.Equal(t, warm.Count{Idle: 1}, c, "the second has one")
		}
	}
	require.Equal(t, sandbox.PoolStats{Size: 3, Ready: 3, Hits: 3 + 1, Misses: 1 + 1}, d.PoolStats(), "b's second run was warm")
	require.Equal(t, removed+3, countCalls(f.Calls(), "remove"), "b's two runs and one of a's idle containers")
	require.Equal(t, 3, f.Live(), "nothing else is left")
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

// A configuration not run for the idle window holds nothing once its
// containers expire, and its next run is cold again.
func TestDemandPoolShrinksToZeroWhenIdle(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeClient{init: (&echoInit{}).run, startHook: gatedStarts(gate)}
	d, clk := newDemandDocker(t, f, 4, 200*time.Millisecond)
	spec := testSpec(t)
	grow(t, d, spec, gate, 5)
	require.Equal(t, 4, d.PoolStats().Ready, "it had grown")
	close(gate)

	clk.add(time.Second)
	require.Eventually(t, func() bool {
		return d.PoolStats().Ready == 0 && f.Live() == 0
	}, 5*time.Second, time.Millisecond, "the idle timers removed them all")
	misses := d.PoolStats().Misses
	_, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, misses+1, d.PoolStats().Misses, "cold again")
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

// When a configuration's demand falls, its next run's refill removes the
// idle containers it no longer wants.
func TestDemandPoolRemovesWhatItNoLongerWants(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeClient{init: (&echoInit{}).run, startHook: gatedStarts(gate)}
	d, clk := newDemandDocker(t, f, 4, time.Minute)
	spec := testSpec(t)
	grow(t, d, spec, gate, 5)
	close(gate)
	waitIdle(t, settled(t, d), 4)
	removed := countCalls(f.Calls(), "remove")

	clk.add(2 * time.Minute) // past the idle window, by the sizer's clock
	_, err := d.Run(context.Background(), spec)
	require.NoError(t, err)
	waitIdle(t, settled(t, d), 1)
	require.Equal(t, 1, f.Live(), "one kept for the next run")
	require.Equal(t, removed+3, countCalls(f.Calls(), "remove"), "the run's own container and two idle ones")
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}

func TestDemandPoolOffWithZero(t *testing.T) {
	f := &fakeClient{init: (&echoInit{}).run}
	d, _ := newDemandDocker(t, f, 0, time.Minute)
	require.Nil(t, d.pool())
	for range 2 {
		_, err := d.Run(context.Background(), testSpec(t))
		require.NoError(t, err)
	}
	settled(t, d)
	require.Equal(t, 2, countCalls(f.Calls(), "create"), "both cold")
	require.Equal(t, sandbox.PoolStats{}, d.PoolStats())
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
	_, err := New(WithClient(f), WithVersion("t"), WithWarmPoolByDemand(-1, time.Minute))
	require.Error(t, err)
	_, err = New(WithClient(f), WithVersion("t"), WithWarmPoolByDemand(2, 0))
	require.Error(t, err)
}

// Runs of several configurations at once, takes racing refills, trims and
// expiry, then Close: nothing is left, and the cap holds throughout.
func TestDemandPoolConcurrentRunsLeaveNothing(t *testing.T) {
	f := &fakeClient{init: (&echoInit{}).run, startHook: slowStarts}
	d, clk := newDemandDocker(t, f, 3, 50*time.Millisecond)
	specs := []sandbox.Spec{testSpec(t), testSpec(t), testSpec(t)}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 10 {
				res, err := d.Run(context.Background(), specs[(g+i)%len(specs)])
				if err != nil || !res.Success {
					t.Errorf("run: %v %+v", err, res)
					return
				}
				if r := d.PoolStats().Ready; r > 3 {
					t.Errorf("pool holds %d, over its cap of 3", r)
				}
				clk.add(7 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.NoError(t, d.Close())
	require.Zero(t, f.Live())
}
