package warm

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Pool keeps sandboxes of type T started ahead of their runs, by
// configuration key: the machinery every pooled backend shares. A backend says what
// a key is, how a sandbox starts (the function given to Refill), how a run
// claims one (the function given to Take) and how an unused one goes
// (PoolConfig.Discard); the Pool does the counting, the waiting and the
// idle timers, and asks its Sizer how many to keep.
//
// After each run the backend calls Refill, which carries out the Sizer's
// plan. A run that finds none idle waits for one already starting rather
// than start another beside it. A sandbox serves one run only. Idle ones
// are discarded after MaxIdle and by Close. T is a pointer in practice: its
// zero value means "none".
type Pool[T comparable] struct {
	cfg PoolConfig[T]
	// ctx ends with Close, so that starts under way may give up.
	ctx    context.Context
	cancel context.CancelFunc
	own    sync.WaitGroup // background work when cfg.Go is nil

	mu     sync.Mutex
	closed bool
	count  int // idle plus starting
	idle   map[string][]*entry[T]
	// starting counts the starts under way per key; waiters are the runs
	// waiting for one of them, first come first served. A nil entry on a
	// waiter's channel says the start failed.
	starting map[string]int
	waiters  map[string][]chan *entry[T]
	// hits and misses count the runs that could use the pool and did or
	// did not get a sandbox.
	hits, misses atomic.Uint64
}

// PoolConfig is what a backend tells its Pool.
type PoolConfig[T comparable] struct {
	// Sizer decides how many to keep; required.
	Sizer *Sizer
	// MaxIdle is how long a sandbox may wait for a run.
	MaxIdle time.Duration
	// Discard removes a sandbox no run will use. It runs in the background.
	Discard func(T)
	// Age, when set, is how old a sandbox already is when it becomes idle,
	// so that its idle time counts from its start; nil counts from then.
	Age func(T) time.Duration
	// Go runs background work (starts and discards). nil: goroutines of the
	// Pool's own, which Close waits for; a backend that counts its
	// background work itself passes its own and waits for it.
	Go func(func())
}

type entry[T comparable] struct {
	v     T
	timer *time.Timer
}

// NewPool returns a Pool, or nil when cfg.Sizer is nil (the pool is off).
// Every method of a nil Pool is a no-op that finds nothing.
func NewPool[T comparable](cfg PoolConfig[T]) *Pool[T] {
	if cfg.Sizer == nil {
		return nil
	}
	p := &Pool[T]{cfg: cfg, idle: map[string][]*entry[T]{},
		starting: map[string]int{}, waiters: map[string][]chan *entry[T]{}}
	p.ctx, p.cancel = context.WithCancel(context.Background()) //nolint:gosec // the Pool keeps cancel; Close calls it
	return p
}

// Take returns a sandbox of key that claim accepted, or the zero T: none
// idle, none starting beyond the runs already waiting, or ctx ended while
// it waited. A sandbox claim refuses is discarded and the next one tried;
// claim logs why it refused.
func (p *Pool[T]) Take(ctx context.Context, key string, claim func(context.Context, T) error) T {
	var zero T
	if p == nil || key == "" {
		return zero
	}
	for {
		e, wait := p.next(key)
		if wait != nil {
			e = p.await(ctx, key, wait)
		}
		if e == nil {
			return zero
		}
		if err := claim(ctx, e.v); err == nil {
			return e.v
		}
		p.Discard(e.v)
		if ctx.Err() != nil {
			return zero
		}
	}
}

// next pops an idle sandbox of key, newest first, or else returns a
// channel on which one starting for key will come, when more are starting
// than runs wait for them.
func (p *Pool[T]) next(key string) (*entry[T], chan *entry[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg.Sizer.Arrive(key, len(p.idle[key]))
	if list := p.idle[key]; len(list) > 0 {
		e := list[len(list)-1]
		if p.idle[key] = list[:len(list)-1]; len(p.idle[key]) == 0 {
			delete(p.idle, key)
		}
		p.count--
		e.timer.Stop()
		return e, nil
	}
	if p.closed || p.starting[key] <= len(p.waiters[key]) {
		return nil, nil
	}
	ch := make(chan *entry[T], 1)
	p.waiters[key] = append(p.waiters[key], ch)
	return nil, ch
}

// await waits for a sandbox on ch. When ctx ends first, one handed over
// meanwhile goes back to the pool, for the next run.
func (p *Pool[T]) await(ctx context.Context, key string, ch chan *entry[T]) *entry[T] {
	select {
	case e := <-ch:
		return e
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.waiters[key], ch); i >= 0 {
		p.waiters[key] = slices.Delete(p.waiters[key], i, i+1)
		return nil
	}
	if e := <-ch; e != nil {
		if p.closed {
			p.discard(e.v)
		} else {
			p.count++
			p.place(key, e)
		}
	}
	return nil
}

// handOver gives e to the first run waiting for key and reports whether
// there was one. Called with p.mu held.
func (p *Pool[T]) handOver(key string, e *entry[T]) bool {
	list := p.waiters[key]
	if len(list) == 0 {
		return false
	}
	list[0] <- e
	if p.waiters[key] = list[1:]; len(p.waiters[key]) == 0 {
		delete(p.waiters, key)
	}
	return true
}

// Refill carries out the Sizer's plan for key: idle sandboxes it no longer
// wants are discarded, and the ones it wants are started in the background
// with start. Runs call it once they have their Result, so the starts do
// not compete with a script for the CPUs. start gets a context that ends
// with Close; on error it returns what it made, if anything, to discard.
func (p *Pool[T]) Refill(key string, start func(context.Context) (T, error)) {
	if p == nil || key == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	plan := p.cfg.Sizer.Plan(key, Held(p.idle, p.starting))
	for k, n := range plan.Remove {
		p.trim(k, n)
	}
	for range plan.Start {
		p.count++
		p.starting[key]++
		p.background(func() { p.add(key, start) })
	}
}

// trim discards the n longest idle sandboxes of key. Called with p.mu held.
func (p *Pool[T]) trim(key string, n int) {
	list := p.idle[key]
	n = min(n, len(list))
	for _, e := range list[:n] {
		e.timer.Stop()
		p.count--
		p.discard(e.v)
	}
	if p.idle[key] = slices.Delete(list, 0, n); len(p.idle[key]) == 0 {
		delete(p.idle, key)
	}
}

// add starts one sandbox and hands it to a waiting run, or makes it idle
// under key. Its place in count and starting is taken.
func (p *Pool[T]) add(key string, start func(context.Context) (T, error)) {
	var zero T
	began := p.cfg.Sizer.Now()
	v, err := start(p.ctx)
	if err == nil {
		p.cfg.Sizer.Started(key, p.cfg.Sizer.Now().Sub(began))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.starting[key]--; p.starting[key] == 0 {
		delete(p.starting, key)
	}
	if err != nil || p.closed {
		p.count--
		if v != zero {
			p.discard(v)
		}
		p.handOver(key, nil) // that run starts one of its own
		return
	}
	p.place(key, &entry[T]{v: v})
}

// place hands a started sandbox to a waiting run, or makes it idle until
// MaxIdle is up. Called with p.mu held; e holds a place in count.
func (p *Pool[T]) place(key string, e *entry[T]) {
	if p.handOver(key, e) {
		p.count--
		return
	}
	wait := p.cfg.MaxIdle
	if p.cfg.Age != nil {
		wait -= p.cfg.Age(e.v)
	}
	e.timer = time.AfterFunc(wait, func() { p.expire(key, e) })
	p.idle[key] = append(p.idle[key], e)
}

// expire discards a sandbox that waited too long.
func (p *Pool[T]) expire(key string, e *entry[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[key]
	if i := slices.Index(list, e); i >= 0 {
		if p.idle[key] = slices.Delete(list, i, i+1); len(p.idle[key]) == 0 {
			delete(p.idle, key)
		}
		p.count--
		p.discard(e.v)
	}
}

// Discard removes v, which no run will use, in the background.
func (p *Pool[T]) Discard(v T) {
	p.discard(v)
}

func (p *Pool[T]) discard(v T) {
	p.background(func() { p.cfg.Discard(v) })
}

func (p *Pool[T]) background(f func()) {
	if p.cfg.Go != nil {
		p.cfg.Go(f)
		return
	}
	p.own.Add(1)
	go func() {
		defer p.own.Done()
		f()
	}()
}

// Close discards the idle sandboxes, ends the context of the starts under
// way, and tells waiting runs to start their own. Without PoolConfig.Go it
// returns once all its background work is done; with it, the caller waits.
func (p *Pool[T]) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.cancel()
	for key, list := range p.idle {
		for _, e := range list {
			e.timer.Stop()
			p.count--
			p.discard(e.v)
		}
		delete(p.idle, key)
	}
	for key := range p.waiters {
		for p.handOver(key, nil) {
		}
	}
	p.mu.Unlock()
	p.own.Wait()
}

// Count records whether a run that could use the pool got a sandbox.
func (p *Pool[T]) Count(key string, hit bool) {
	if p == nil || key == "" {
		return
	}
	if hit {
		p.hits.Add(1)
	} else {
		p.misses.Add(1)
	}
}

// Stats are a pool's figures.
type Stats struct {
	Size, Ready  int // the most it keeps; idle plus starting
	Hits, Misses uint64
}

// Stats returns the pool's figures; all zero when it is off.
func (p *Pool[T]) Stats() Stats {
	if p == nil {
		return Stats{}
	}
	p.mu.Lock()
	ready := p.count
	p.mu.Unlock()
	return Stats{Size: p.cfg.Sizer.Max(), Ready: ready, Hits: p.hits.Load(), Misses: p.misses.Load()}
}

// Snapshot is what a pool holds at one moment, for tests and figures.
type Snapshot[T comparable] struct {
	Idle    map[string][]T
	Held    map[string]Count
	Waiting int // runs waiting for a start under way
}

// Snapshot returns what the pool holds now.
func (p *Pool[T]) Snapshot() Snapshot[T] {
	if p == nil {
		return Snapshot[T]{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Snapshot[T]{Idle: map[string][]T{}, Held: Held(p.idle, p.starting)}
	for k, list := range p.idle {
		for _, e := range list {
			s.Idle[k] = append(s.Idle[k], e.v)
		}
	}
	for _, w := range p.waiters {
		s.Waiting += len(w)
	}
	return s
}

// IdleCount is how many sandboxes are idle, over every key.
func (s Snapshot[T]) IdleCount() int {
	n := 0
	for _, l := range s.Idle {
		n += len(l)
	}
	return n
}
