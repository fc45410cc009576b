package warm

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"
)

// Sizer is the sizing policy of one pool. Pools tell it each run that could
// use a warm sandbox (Arrive) and how long each warm start took (Started),
// and ask it what a refill does (Plan). It is safe for concurrent use.
type Sizer struct {
	max    int
	demand bool
	hot    time.Duration // a key with no arrival for this long wants none
	tau    time.Duration // time constant of the decayed arrival rate
	now    func() time.Time

	mu   sync.Mutex
	keys map[string]*demand
}

// demand is what the Sizer knows of one configuration.
type demand struct {
	// sum is Σ exp(-(last-tᵢ)/tau) over the arrivals tᵢ, as of last.
	sum         float64
	first, last time.Time
	// refill is a moving average of how long a warm start took; zero
	// until one was seen.
	refill time.Duration
	// floor is the fewest it wants, from what its runs found: it grows
	// by one for each run that found none idle, and shrinks by one for
	// each that found two to spare. The rate alone cannot see the demand
	// of callers that wait for their runs: a loop that waits for each
	// start arrives only as fast as the pool refills.
	floor int
}

// RateTimeConstant is how fast the arrival rate forgets: an arrival counts
// e⁻¹ as much after this long. Short enough that a burst is seen within a
// few runs, long enough that a pause between an agent's calls is not a
// drop in demand.
const RateTimeConstant = 30 * time.Second

// minWindow keeps the rate of a configuration seen for a moment from
// reading as a burst: two runs a millisecond apart are 2 per second, not
// 2000.
const minWindow = time.Second

// Fixed keeps size sandboxes in all: after each run the pool is topped up
// to size with sandboxes of that run's configuration. 0 or less is off (nil).
func Fixed(size int) *Sizer {
	if size <= 0 {
		return nil
	}
	return &Sizer{max: size, now: time.Now}
}

// ByDemand keeps, for each configuration run within the last idle window,
// as many sandboxes as its recent arrival rate times the time a warm start
// takes (Little's law: the starts under way when each run takes one),
// rounded up and at least 1, so that its next run finds one ready; and
// more while its runs find none ready (see demand.floor). The
// configurations share max: when their wants add up to more, each gets a
// share in proportion, and at least 1 while the cap allows. A configuration
// idle for the window wants none, and the pool's idle timers remove what
// it holds. max 0 or less is off (nil). now is the clock (nil: time.Now);
// pools time their starts with Now, so a fake clock drives both.
func ByDemand(max int, idle time.Duration, now func() time.Time) *Sizer {
	if max <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Sizer{max: max, demand: true, hot: idle, tau: RateTimeConstant, now: now, keys: map[string]*demand{}}
}

// Now is the Sizer's clock.
func (s *Sizer) Now() time.Time { return s.now() }

// Max is the cap on the sandboxes the pool holds, idle or starting.
func (s *Sizer) Max() int {
	if s == nil {
		return 0
	}
	return s.max
}

// Arrive records a run of key that could use a warm sandbox, which found
// idle of them waiting.
func (s *Sizer) Arrive(key string, idle int) {
	if s == nil || !s.demand {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	d := s.keys[key]
	switch {
	case d == nil || now.Sub(d.last) > s.hot:
		// New, or cold: its first run is cold and says nothing of the
		// next.
		d = &demand{first: now, last: now, floor: 1}
		s.keys[key] = d
	case idle == 0:
		d.floor = min(d.floor+1, s.max)
	case idle > 2:
		d.floor = max(d.floor-1, 1)
	}
	d.sum = d.sum*s.decay(now.Sub(d.last)) + 1
	d.last = now
}

// Started records that a warm start of key took took.
func (s *Sizer) Started(key string, took time.Duration) {
	if s == nil || !s.demand {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.keys[key]
	if d == nil {
		return // gone cold meanwhile
	}
	if d.refill == 0 {
		d.refill = took
		return
	}
	d.refill = (3*d.refill + took) / 4
}

func (s *Sizer) decay(dt time.Duration) float64 {
	return math.Exp(-dt.Seconds() / s.tau.Seconds())
}

// rate is d's arrivals per second at now. The decayed sum is divided by
// the weight of the window actually observed, so a configuration seen for
// less than tau is not underestimated.
func (s *Sizer) rate(d *demand, now time.Time) float64 {
	window := max(now.Sub(d.first), minWindow)
	weight := s.tau.Seconds() * (1 - s.decay(window))
	return d.sum * s.decay(now.Sub(d.last)) / weight
}

// want is what d asks for alone: 0 when cold, else at least its floor.
func (s *Sizer) want(d *demand, now time.Time) int {
	if now.Sub(d.last) > s.hot {
		return 0
	}
	n := math.Ceil(s.rate(d, now) * d.refill.Seconds())
	return int(min(max(n, float64(d.floor)), float64(s.max)))
}

// targets are the sandboxes each hot key should hold within the cap. Cold
// keys are forgotten. Called with s.mu held.
func (s *Sizer) targets() map[string]int {
	now := s.now()
	type wish struct {
		key  string
		n    int
		last time.Time
	}
	var wishes []wish
	total := 0
	for k, d := range s.keys {
		n := s.want(d, now)
		if n == 0 {
			delete(s.keys, k)
			continue
		}
		wishes = append(wishes, wish{k, n, d.last})
		total += n
	}
	out := make(map[string]int, len(wishes))
	if total <= s.max {
		for _, w := range wishes {
			out[w.key] = w.n
		}
		return out
	}
	// Over the cap: 1 each, most recently used first, then the rest in
	// proportion to what each wants beyond 1, the remainders going to the
	// largest fractions.
	slices.SortFunc(wishes, func(a, b wish) int {
		return cmp.Or(b.last.Compare(a.last), cmp.Compare(a.key, b.key))
	})
	left := s.max
	extra := 0
	for _, w := range wishes {
		if left == 0 {
			break
		}
		out[w.key] = 1
		left--
		extra += w.n - 1
	}
	if left == 0 || extra == 0 {
		return out
	}
	type frac struct {
		key string
		f   float64
	}
	var fracs []frac
	given := 0
	for _, w := range wishes {
		if _, ok := out[w.key]; !ok || w.n == 1 {
			continue
		}
		share := float64(left) * float64(w.n-1) / float64(extra)
		whole := int(share)
		out[w.key] += whole
		given += whole
		fracs = append(fracs, frac{w.key, share - float64(whole)})
	}
	slices.SortStableFunc(fracs, func(a, b frac) int { return cmp.Compare(b.f, a.f) })
	for i := 0; given < left && i < len(fracs); i++ {
		out[fracs[i].key]++
		given++
	}
	return out
}

// Count is what a pool holds of one key.
type Count struct{ Idle, Starting int }

// Total is the sandboxes counted.
func (c Count) Total() int { return c.Idle + c.Starting }

// Plan is what a refill of one key does: remove idle sandboxes (the key's
// own beyond its target, and other keys' beyond theirs to make room under
// the cap), then start Start sandboxes of the key.
type Plan struct {
	Start int
	// Remove is how many idle sandboxes to remove, by key.
	Remove map[string]int
}

// Plan says what a refill of key does, given what the pool holds now.
func (s *Sizer) Plan(key string, held map[string]Count) Plan {
	if s == nil {
		return Plan{}
	}
	total := 0
	for _, c := range held {
		total += c.Total()
	}
	if !s.demand {
		return Plan{Start: max(s.max-total, 0)}
	}
	s.mu.Lock()
	targets := s.targets()
	s.mu.Unlock()
	plan := Plan{Remove: map[string]int{}}
	target, have := targets[key], held[key]
	if have.Total() > target {
		if n := min(have.Total()-target, have.Idle); n > 0 {
			plan.Remove[key] = n
		}
		return plan
	}
	need := target - have.Total()
	free := s.max - total
	// Make room from the keys holding more than their share, idle ones only:
	// a starting sandbox is someone's next run.
	others := make([]string, 0, len(held))
	for k := range held {
		if k != key {
			others = append(others, k)
		}
	}
	slices.Sort(others) // a plan does not depend on map order
	for _, k := range others {
		if free >= need {
			break
		}
		c := held[k]
		if n := min(c.Total()-targets[k], c.Idle, need-free); n > 0 {
			plan.Remove[k] = n
			free += n
		}
	}
	plan.Start = max(min(need, free), 0)
	return plan
}

// Held counts what a pool holds by key: its idle entries and the starts
// under way, the two maps warm.Pool keeps.
func Held[T any](idle map[string][]T, starting map[string]int) map[string]Count {
	out := make(map[string]Count, len(idle)+len(starting))
	for k, list := range idle {
		out[k] = Count{Idle: len(list)}
	}
	for k, n := range starting {
		c := out[k]
		c.Starting = n
		out[k] = c
	}
	return out
}
