package sandboxrun

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// ErrBusy means every execution slot is taken and the queue is full, or a
// run waited Config.QueueWait for a slot without getting one. Nothing ran;
// the caller may retry shortly (the HTTP API answers 429 with Retry-After,
// the MCP tools an error result that says to retry).
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

// admission bounds runs for every front end alike: at most cap(slots) run
// at once and at most cap(queue) wait for a slot; past that a run is turned
// away at once (ErrBusy) rather than piling up.
type admission struct {
	slots chan struct{}
	queue chan struct{}
	wait  time.Duration
}

func newAdmission(running, waiting int, wait time.Duration) *admission {
	return &admission{slots: make(chan struct{}, running), queue: make(chan struct{}, waiting), wait: wait}
}

// acquire waits for a slot, at most the admission's wait and never past
// ctx, and returns how long it waited and the release function. A wait
// that ran out is ErrBusy; a ctx that ended is ctx's error.
func (a *admission) acquire(ctx context.Context) (time.Duration, func(), error) {
	_, span := telemetry.Start(ctx, "sandboxrun.queue")
	defer span.End()
	select {
	case a.slots <- struct{}{}:
		return 0, a.release, nil
	default:
	}
	select {
	case a.queue <- struct{}{}:
	default:
		return 0, nil, ErrBusy
	}
	defer func() { <-a.queue }()
	start := time.Now()
	timer := time.NewTimer(a.wait)
	defer timer.Stop()
	select {
	case a.slots <- struct{}{}:
		return time.Since(start), a.release, nil
	case <-timer.C:
		return time.Since(start), nil, ErrBusy
	case <-ctx.Done():
		return time.Since(start), nil, ctx.Err()
	}
}

func (a *admission) release() { <-a.slots }

// Load is how many runs hold a slot and how many wait for one now.
func (s *Service) Load() Load {
	return Load{Running: len(s.admit.slots), Queued: len(s.admit.queue)}
}

// admitRun waits for a run's slot and tells a QueueObserver how long it
// waited, turned away or not.
func (s *Service) admitRun(ctx context.Context) (func(), error) {
	waited, release, err := s.admit.acquire(ctx)
	if o, ok := s.cfg.Observer.(QueueObserver); ok {
		o.ObserveQueue(waited)
	}
	return release, err
}
