package sandboxrun

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queueUp starts acquire for tenant in the background and waits until it
// is in the queue; the result arrives on the returned channel.
type got struct {
	tenant  string
	release func()
	err     error
}

func queueUp(t *testing.T, a *admission, tenant string, out chan<- got) {
	t.Helper()
	before := a.load().Queued
	go func() {
		_, rel, err := a.acquire(context.Background(), tenant)
		out <- got{tenant, rel, err}
	}()
	require.Eventually(t, func() bool { return a.load().Queued == before+1 }, 5*time.Second, time.Millisecond, "%s's run joins the queue", tenant)
}

func take(t *testing.T, a *admission, tenant string) func() {
	t.Helper()
	_, rel, err := a.acquire(context.Background(), tenant)
	require.NoError(t, err)
	return rel
}

func TestAdmissionRoundRobin(t *testing.T) {
	a := newAdmission(1, 8, time.Minute, true, nil)
	rel := take(t, a, "flood")
	out := make(chan got, 8)
	for range 3 {
		queueUp(t, a, "flood", out)
	}
	queueUp(t, a, "quiet", out)
	var order []string
	for range 4 {
		rel()
		g := <-out
		require.NoError(t, g.err)
		order = append(order, g.tenant)
		rel = g.release
	}
	rel()
	require.Equal(t, []string{"flood", "quiet", "flood", "flood"}, order, "the quiet run waits one turn, not the flood's whole queue")
	require.Equal(t, Load{}, a.load())
	require.Empty(t, a.tenants, "idle tenants leave nothing behind")
}

func TestAdmissionWithoutFairShareIsFIFO(t *testing.T) {
	a := newAdmission(1, 8, time.Minute, false, nil)
	rel := take(t, a, "flood")
	out := make(chan got, 8)
	for range 3 {
		queueUp(t, a, "flood", out)
	}
	queueUp(t, a, "quiet", out)
	var order []string
	for range 4 {
		rel()
		g := <-out
		order = append(order, g.tenant)
		rel = g.release
	}
	rel()
	require.Equal(t, []string{"flood", "flood", "flood", "quiet"}, order)
}

func TestAdmissionFullQueueMakesRoomForAnotherTenant(t *testing.T) {
	a := newAdmission(1, 3, time.Minute, true, nil)
	rel := take(t, a, "flood")
	out := make(chan got, 8)
	for range 3 {
		queueUp(t, a, "flood", out)
	}
	_, _, err := a.acquire(context.Background(), "flood")
	require.ErrorIs(t, err, ErrBusy, "the flood's own run finds the queue full")

	go func() {
		_, r, err := a.acquire(context.Background(), "quiet")
		out <- got{"quiet", r, err}
	}()
	g := <-out
	require.Equal(t, "flood", g.tenant, "the flood's newest run is turned away to make room")
	require.ErrorIs(t, g.err, ErrBusy)
	require.Eventually(t, func() bool { return a.load().Queued == 3 }, 5*time.Second, time.Millisecond)
	var order []string
	for range 3 {
		rel()
		g := <-out
		require.NoError(t, g.err)
		order = append(order, g.tenant)
		rel = g.release
	}
	rel()
	require.Equal(t, []string{"flood", "quiet", "flood"}, order)
}

func TestAdmissionTenantCaps(t *testing.T) {
	caps := func(tenant string) (int, int) {
		if tenant == "ci" {
			return 1, 1
		}
		return 0, 0
	}
	a := newAdmission(3, 8, time.Minute, true, caps)
	rel := take(t, a, "ci")
	out := make(chan got, 8)
	queueUp(t, a, "ci", out)
	_, _, err := a.acquire(context.Background(), "ci")
	require.ErrorIs(t, err, ErrBusy, "ci may have one run waiting")
	other := take(t, a, "team")
	require.Equal(t, Load{Running: 2, Queued: 1}, a.load(), "a free slot is not ci's past its running cap")
	rel()
	g := <-out
	require.NoError(t, g.err)
	g.release()
	other()
	require.Equal(t, Load{}, a.load())
}

func TestAdmissionWaitAndCancel(t *testing.T) {
	a := newAdmission(1, 4, 50*time.Millisecond, true, nil)
	rel := take(t, a, "a")
	_, _, err := a.acquire(context.Background(), "b")
	require.ErrorIs(t, err, ErrBusy, "a wait that runs out is ErrBusy")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _, err := a.acquire(ctx, "b")
		require.ErrorIs(t, err, context.Canceled)
	}()
	require.Eventually(t, func() bool { return a.load().Queued == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	wg.Wait()
	require.Equal(t, Load{Running: 1}, a.load())
	rel()
	require.Equal(t, Load{}, a.load())

	none := newAdmission(1, 0, time.Minute, true, nil)
	rel = take(t, none, "a")
	_, _, err = none.acquire(context.Background(), "b")
	require.ErrorIs(t, err, ErrBusy, "no queue: turned away at once")
	rel()
}
