package sandboxrun

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// ErrBusy means every execution slot is taken and the queue is full (or
// the caller's token holds its share of them), or a run waited
// Config.QueueWait for a slot without getting one. Nothing ran; the caller
// may retry shortly (the HTTP API answers 429 with Retry-After, the MCP
// tools an error result that says to retry).
var ErrBusy = errors.New("server busy: every execution slot is taken and the queue is full; retry in a few seconds")

// DefaultMaxQueued and DefaultQueueWait are Config.MaxQueued's and
// Config.QueueWait's defaults: `serve --max-queued` and `--queue-wait`'s.
const (
	DefaultMaxQueued = 16
	DefaultQueueWait = 30 * time.Second
)

// NoQueue as Config.MaxQueued keeps no queue: a run that finds every slot
// taken is refused at once with ErrBusy (`serve --max-queued 0`). The zero
// Config's 0 is the default queue.
const NoQueue = -1

// QueueObserver is told how long each admitted run waited for its slot;
// an Observer that implements it (the server's metrics) is told.
type QueueObserver interface {
	ObserveQueue(wait time.Duration)
}

// Load is what the admission holds now, for metrics.
type Load struct {
	Running int // runs holding a slot
	Queued  int // runs waiting for one
}

// admission bounds runs for every front end alike: at most slots run at
// once and at most queueCap wait for a slot; past that a run is turned
// away at once (ErrBusy) rather than piling up. With fair share on, runs
// are counted by tenant (the caller's token label): each tenant may hold
// at most its share's running and queued runs, a freed slot goes to the
// next tenant waiting in turn (round-robin), and a full queue makes room
// for a tenant with fewer runs waiting by turning away the newest run of
// the tenant with the most. Off, every run is one tenant's: one FIFO.
type admission struct {
	slots, queueCap int
	wait            time.Duration
	fair            bool
	// caps is a tenant's share: 0 for no cap below the server's own.
	caps func(tenant string) (running, queued int)

	mu      sync.Mutex
	running int
	queued  int
	tenants map[string]*tenantLoad
	ring    []string // tenants with runs waiting, in turn order
	next    int      // where in ring the next freed slot looks first
}

// tenantLoad is one tenant's runs holding a slot and waiting for one,
// oldest first.
type tenantLoad struct {
	running int
	waiting []*waiter
}

// waiter is a run in the queue; done closes once it was given a slot
// (err nil) or turned away to make room (err ErrBusy).
type waiter struct {
	done chan struct{}
	err  error
}

func newAdmission(running, waiting int, wait time.Duration, fair bool, caps func(string) (int, int)) *admission {
	if caps == nil {
		caps = func(string) (int, int) { return 0, 0 }
	}
	return &admission{slots: running, queueCap: waiting, wait: wait, fair: fair, caps: caps, tenants: map[string]*tenantLoad{}}
}

// acquire waits for a slot for tenant, at most the admission's wait and
// never past ctx, and returns how long it waited and the release
// function. A wait that ran out, or no room, is ErrBusy; a ctx that ended
// is ctx's error.
func (a *admission) acquire(ctx context.Context, tenant string) (time.Duration, func(), error) {
	_, span := telemetry.Start(ctx, "sandboxrun.queue")
	defer span.End()
	if !a.fair {
		tenant = ""
	}
	release := func() { a.release(tenant) }
	a.mu.Lock()
	t := a.tenant(tenant)
	capRun, capQueue := a.shareOf(tenant)
	if a.running < a.slots && len(t.waiting) == 0 && (capRun == 0 || t.running < capRun) {
		a.running++
		t.running++
		a.mu.Unlock()
		return 0, release, nil
	}
	if !a.makeRoom(tenant, t, capQueue) {
		a.forget(tenant, t)
		a.mu.Unlock()
		return 0, nil, ErrBusy
	}
	w := &waiter{done: make(chan struct{})}
	t.waiting = append(t.waiting, w)
	a.queued++
	if len(t.waiting) == 1 {
		a.ring = append(a.ring, tenant)
	}
	a.mu.Unlock()

	start := time.Now()
	timer := time.NewTimer(a.wait)
	defer timer.Stop()
	var gaveUp error
	select {
	case <-w.done:
	case <-timer.C:
		gaveUp = ErrBusy
	case <-ctx.Done():
		gaveUp = ctx.Err()
	}
	waited := time.Since(start)
	if gaveUp != nil && a.leave(tenant, w) {
		return waited, nil, gaveUp
	}
	// Given a slot (or turned away) before, or while, giving up.
	switch {
	case w.err != nil:
		return waited, nil, w.err
	case ctx.Err() != nil:
		release()
		return waited, nil, ctx.Err()
	}
	return waited, release, nil
}

// shareOf is tenant's caps; the server's own when fair share is off.
func (a *admission) shareOf(tenant string) (running, queued int) {
	if !a.fair {
		return 0, 0
	}
	return a.caps(tenant)
}

// makeRoom reports whether tenant's run may join the queue, turning away
// another tenant's newest run when the queue is full and that tenant has
// more runs waiting than tenant.
func (a *admission) makeRoom(tenant string, t *tenantLoad, capQueue int) bool {
	if capQueue > 0 && len(t.waiting) >= capQueue {
		return false
	}
	if a.queued < a.queueCap {
		return true
	}
	if !a.fair || a.queueCap == 0 {
		return false
	}
	var victim *tenantLoad
	for _, name := range a.ring {
		if o := a.tenants[name]; name != tenant && len(o.waiting) > len(t.waiting)+1 && (victim == nil || len(o.waiting) > len(victim.waiting)) {
			victim = o
		}
	}
	if victim == nil {
		return false
	}
	w := victim.waiting[len(victim.waiting)-1]
	victim.waiting = victim.waiting[:len(victim.waiting)-1]
	a.queued--
	w.err = ErrBusy
	close(w.done)
	// The victim keeps runs waiting (it had more than one), so it stays
	// in the ring.
	return true
}

// leave takes w out of the queue when it is still there (true); false
// when it was given a slot or turned away meanwhile.
func (a *admission) leave(tenant string, w *waiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tenants[tenant]
	for i, o := range t.waiting {
		if o == w {
			t.waiting = append(t.waiting[:i], t.waiting[i+1:]...)
			a.queued--
			if len(t.waiting) == 0 {
				a.dropFromRing(tenant)
			}
			a.forget(tenant, t)
			// A run that left may have been what kept a freed slot from
			// a tenant behind its own cap: nothing changes for the others.
			return true
		}
	}
	return false
}

func (a *admission) release(tenant string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running--
	t := a.tenants[tenant]
	t.running--
	a.dispatch()
	a.forget(tenant, t)
}

// dispatch gives free slots to waiting runs, one tenant after another
// from where the last turn ended, skipping tenants at their running cap.
func (a *admission) dispatch() {
	for a.running < a.slots && len(a.ring) > 0 {
		given := false
		for i := 0; i < len(a.ring); i++ {
			at := (a.next + i) % len(a.ring)
			name := a.ring[at]
			t := a.tenants[name]
			if capRun, _ := a.shareOf(name); capRun > 0 && t.running >= capRun {
				continue
			}
			w := t.waiting[0]
			t.waiting = t.waiting[1:]
			a.queued--
			a.running++
			t.running++
			close(w.done)
			if len(t.waiting) == 0 {
				a.ring = append(a.ring[:at], a.ring[at+1:]...)
				a.next = at
			} else {
				a.next = at + 1
			}
			given = true
			break
		}
		if !given {
			return
		}
	}
}

func (a *admission) dropFromRing(tenant string) {
	for i, name := range a.ring {
		if name == tenant {
			a.ring = append(a.ring[:i], a.ring[i+1:]...)
			if a.next > i {
				a.next--
			}
			return
		}
	}
}

func (a *admission) tenant(name string) *tenantLoad {
	t := a.tenants[name]
	if t == nil {
		t = &tenantLoad{}
		a.tenants[name] = t
	}
	return t
}

// forget drops an idle tenant's entry, so tokens that come and go leave
// nothing behind.
func (a *admission) forget(name string, t *tenantLoad) {
	if t.running == 0 && len(t.waiting) == 0 {
		delete(a.tenants, name)
	}
}

func (a *admission) load() Load {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Load{Running: a.running, Queued: a.queued}
}

// Load is how many runs hold a slot and how many wait for one now.
func (s *Service) Load() Load { return s.admit.load() }

// admitRun waits for a run's slot, shared fairly by the caller's token
// label, and tells a QueueObserver how long it waited, turned away or not.
func (s *Service) admitRun(ctx context.Context, label string) (func(), error) {
	waited, release, err := s.admit.acquire(ctx, label)
	if o, ok := s.cfg.Observer.(QueueObserver); ok {
		o.ObserveQueue(waited)
	}
	return release, err
}
