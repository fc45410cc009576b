package warm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clock is a fake clock a test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time         { return c.t }
func (c *clock) add(d time.Duration)    { c.t = c.t.Add(d) }
func newClock() *clock                  { return &clock{t: time.Unix(1_700_000_000, 0)} }
func byDemand(max int, c *clock) *Sizer { return ByDemand(max, time.Minute, c.now) }

// arrive records n arrivals of key every dt, each with a warm start that
// took refill.
func arrive(s *Sizer, c *clock, key string, n int, dt, refill time.Duration) {
	for range n {
		s.Arrive(key, 1)
		s.Started(key, refill)
		c.add(dt)
	}
}

func TestOff(t *testing.T) {
	require.Nil(t, Fixed(0))
	require.Nil(t, ByDemand(0, time.Minute, nil))
	require.Nil(t, ByDemand(-1, time.Minute, nil))
	var s *Sizer
	s.Arrive("k", 0)
	s.Started("k", time.Second)
	require.Zero(t, s.Max())
	require.Equal(t, Plan{}, s.Plan("k", nil))
}

func TestFixedTopsUpToSize(t *testing.T) {
	s := Fixed(3)
	require.Equal(t, 3, s.Plan("a", nil).Start)
	require.Equal(t, 1, s.Plan("a", map[string]Count{"b": {Idle: 2}}).Start, "the size is the total")
	require.Equal(t, 0, s.Plan("a", map[string]Count{"a": {Idle: 1, Starting: 3}}).Start)
}

func TestDemandSizing(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		n      int
		dt     time.Duration
		refill time.Duration
		want   int
	}{
		{"one run, start time unknown", 8, 1, 0, 0, 1},
		{"an agent's calls seconds apart", 8, 10, 5 * time.Second, 500 * time.Millisecond, 1},
		{"a loop of 10 runs a second, starts of 400ms", 8, 30, 100 * time.Millisecond, 400 * time.Millisecond, 4},
		{"the same, slower starts", 16, 30, 100 * time.Millisecond, time.Second, 10},
		{"more than the cap", 4, 30, 100 * time.Millisecond, time.Second, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			s := byDemand(tt.max, c)
			if tt.refill == 0 {
				s.Arrive("k", 0)
			} else {
				arrive(s, c, "k", tt.n, tt.dt, tt.refill)
			}
			require.Equal(t, tt.want, s.Plan("k", nil).Start)
		})
	}
}

// The rate grows run by run: a burst is seen within a few runs, and a
// steady rate settles near its true value.
func TestDemandGrowsWithTheRate(t *testing.T) {
	c := newClock()
	s := byDemand(64, c)
	var plans []int
	for range 40 {
		arrive(s, c, "k", 1, 50*time.Millisecond, 500*time.Millisecond)
		plans = append(plans, s.Plan("k", nil).Start)
	}
	require.Equal(t, 1, plans[0])
	for i := 1; i < len(plans); i++ {
		require.GreaterOrEqual(t, plans[i], plans[i-1], "never shrinks while the rate holds: %v", plans)
	}
	require.InDelta(t, 10, plans[len(plans)-1], 1, "20 runs a second × 0.5s: %v", plans)
}

func TestDemandShrinksToZeroWhenIdle(t *testing.T) {
	c := newClock()
	s := byDemand(8, c)
	arrive(s, c, "k", 30, 100*time.Millisecond, time.Second)
	require.Equal(t, Plan{Start: 4, Remove: map[string]int{}}, s.Plan("k", map[string]Count{"k": {Idle: 4}}))

	// Later, at a slow rate, it holds more than it needs: the surplus goes.
	c.add(50 * time.Second)
	arrive(s, c, "k", 1, 0, time.Second)
	require.Equal(t, Plan{Remove: map[string]int{"k": 6}}, s.Plan("k", map[string]Count{"k": {Idle: 6, Starting: 1}}), "the starting one is the 1 it needs")

	c.add(time.Minute + time.Second)
	p := s.Plan("k", map[string]Count{"k": {Idle: 3, Starting: 1}})
	require.Equal(t, Plan{Remove: map[string]int{"k": 3}}, p, "cold: every idle one goes, starting ones are left to expire")
	require.Empty(t, s.keys, "a cold key is forgotten")
}

// Hot keys share the cap in proportion to their demand, each getting one
// first; room is made from idle sandboxes of keys holding more than their
// share, never from starting ones.
func TestDemandSharesTheCap(t *testing.T) {
	c := newClock()
	s := byDemand(6, c)
	arrive(s, c, "busy", 30, 50*time.Millisecond, time.Second)  // wants 20
	arrive(s, c, "quiet", 2, time.Second, 200*time.Millisecond) // wants 1
	s.mu.Lock()
	require.Equal(t, map[string]int{"busy": 5, "quiet": 1}, s.targets())
	s.mu.Unlock()

	held := map[string]Count{"busy": {Idle: 5, Starting: 1}}
	require.Equal(t, Plan{Start: 1, Remove: map[string]int{"busy": 1}}, s.Plan("quiet", held), "busy held the whole cap")
	held = map[string]Count{"busy": {Starting: 6}}
	require.Equal(t, Plan{Start: 0, Remove: map[string]int{}}, s.Plan("quiet", held), "a starting one is not removed")
	held = map[string]Count{"busy": {Idle: 3}, "quiet": {Idle: 1}}
	require.Equal(t, Plan{Start: 2, Remove: map[string]int{}}, s.Plan("busy", held))

	// More hot keys than the cap: the most recent get one each.
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		arrive(s, c, k, 1, time.Millisecond, time.Second)
	}
	s.mu.Lock()
	got := s.targets()
	s.mu.Unlock()
	require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "quiet": 1}, got)
}

func TestDemandNeverExceedsTheCap(t *testing.T) {
	c := newClock()
	s := byDemand(5, c)
	held := map[string]Count{}
	keys := []string{"a", "b", "c"}
	for i := range 300 {
		k := keys[i%len(keys)]
		if i%7 == 0 {
			k = "a"
		}
		s.Arrive(k, held[k].Idle)
		s.Started(k, 700*time.Millisecond)
		c.add(30 * time.Millisecond)
		p := s.Plan(k, held)
		for rk, n := range p.Remove {
			h := held[rk]
			require.LessOrEqual(t, n, h.Idle)
			h.Idle -= n
			held[rk] = h
		}
		h := held[k]
		h.Idle += p.Start
		held[k] = h
		total := 0
		for _, h := range held {
			total += h.Total()
		}
		require.LessOrEqual(t, total, 5)
		if held[k].Idle > 0 { // the next run of k takes one
			h := held[k]
			h.Idle--
			held[k] = h
		}
	}
}

// Callers that wait for each run arrive only as fast as the pool refills,
// so the rate alone would keep one sandbox: runs that find none ready ask
// for more, and runs that find two to spare for fewer.
func TestDemandFollowsWhatRunsFind(t *testing.T) {
	c := newClock()
	s := byDemand(8, c)
	wants := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.targets()["k"]
	}
	s.Arrive("k", 0)
	require.Equal(t, 1, wants(), "a first run says nothing of the next")
	for i := range 10 {
		c.add(time.Second) // one a second, starts of 100ms: the rate asks for 1
		s.Started("k", 100*time.Millisecond)
		s.Arrive("k", 0)
		require.Equal(t, min(2+i, 8), wants(), "run %d found none ready", i)
	}
	for _, tt := range []struct{ idle, want int }{{1, 8}, {2, 8}, {3, 7}, {3, 6}, {8, 5}} {
		c.add(time.Second)
		s.Arrive("k", tt.idle)
		require.Equal(t, tt.want, wants(), "found %d idle", tt.idle)
	}
	c.add(2 * time.Minute)
	s.Arrive("k", 0)
	require.Equal(t, 1, wants(), "back after a pause: starts again from one")
}
