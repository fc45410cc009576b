package warm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type item struct{ n int }

// testPool is a Pool of items whose discards are recorded.
func testPool(t *testing.T, size int) (*Pool[*item], func() []int) {
	var mu sync.Mutex
	var discarded []int
	p := NewPool(PoolConfig[*item]{Sizer: Fixed(size), MaxIdle: time.Minute, Discard: func(it *item) {
		mu.Lock()
		defer mu.Unlock()
		discarded = append(discarded, it.n)
	}})
	t.Cleanup(p.Close)
	return p, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), discarded...)
	}
}

func accept(context.Context, *item) error { return nil }

func TestPoolServesWhatItStarted(t *testing.T) {
	p, discarded := testPool(t, 1)
	require.Nil(t, p.Take(context.Background(), "k", accept), "nothing idle, nothing starting")

	p.Refill("k", func(context.Context) (*item, error) { return &item{n: 1}, nil })
	require.Eventually(t, func() bool { return p.Snapshot().IdleCount() == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, Stats{Size: 1, Ready: 1}, p.Stats())

	require.Nil(t, p.Take(context.Background(), "other", accept), "another configuration's sandbox is never used")
	got := p.Take(context.Background(), "k", accept)
	require.Equal(t, &item{n: 1}, got)
	require.Equal(t, 0, p.Stats().Ready)
	require.Empty(t, discarded())
}

func TestPoolWaitsForAStartUnderWay(t *testing.T) {
	p, _ := testPool(t, 1)
	release := make(chan struct{})
	p.Refill("k", func(context.Context) (*item, error) {
		<-release
		return &item{n: 2}, nil
	})
	got := make(chan *item)
	go func() { got <- p.Take(context.Background(), "k", accept) }()
	require.Eventually(t, func() bool { return p.Snapshot().Waiting == 1 }, 5*time.Second, time.Millisecond)
	close(release)
	require.Equal(t, &item{n: 2}, <-got, "the waiting run gets the one that was starting")
}

func TestPoolDiscardsWhatClaimRefusesAndWhatItCloses(t *testing.T) {
	p, discarded := testPool(t, 2)
	n := 0
	var mu sync.Mutex
	start := func(context.Context) (*item, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return &item{n: n}, nil
	}
	p.Refill("k", start)
	require.Eventually(t, func() bool { return p.Snapshot().IdleCount() == 2 }, 5*time.Second, time.Millisecond)

	refused := 0
	got := p.Take(context.Background(), "k", func(_ context.Context, it *item) error {
		if refused == 0 {
			refused = it.n
			return errors.New("died while idle")
		}
		return nil
	})
	require.NotNil(t, got)
	require.NotEqual(t, refused, got.n)
	require.Eventually(t, func() bool { return len(discarded()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []int{refused}, discarded())

	p.Refill("k", start)
	require.Eventually(t, func() bool { return p.Snapshot().IdleCount() == 2 }, 5*time.Second, time.Millisecond)
	idle := p.Snapshot().IdleCount()
	p.Close()
	require.Len(t, discarded(), 1+idle, "Close discards every idle one and waits for it")
	require.Nil(t, p.Take(context.Background(), "k", accept))
}

func TestPoolFailedStartTellsTheWaiter(t *testing.T) {
	p, _ := testPool(t, 1)
	release := make(chan struct{})
	p.Refill("k", func(context.Context) (*item, error) {
		<-release
		return nil, errors.New("image gone")
	})
	got := make(chan *item)
	go func() { got <- p.Take(context.Background(), "k", accept) }()
	require.Eventually(t, func() bool { return p.Snapshot().Waiting == 1 }, 5*time.Second, time.Millisecond)
	close(release)
	require.Nil(t, <-got, "the run starts one of its own")
	require.Equal(t, 0, p.Stats().Ready)
}

func TestPoolOff(t *testing.T) {
	p := NewPool(PoolConfig[*item]{})
	require.Nil(t, p)
	require.Nil(t, p.Take(context.Background(), "k", accept))
	p.Refill("k", nil)
	p.Count("k", true)
	require.Equal(t, Stats{}, p.Stats())
	p.Close()
}
