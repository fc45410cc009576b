package server

import (
	"context"
	"errors"
	"time"
)

// errBusy means every execution slot is taken and the queue is full.
var errBusy = errors.New("server busy: every execution slot is taken and the queue is full; retry later")

// admission bounds executions: at most cap(slots) run at once and at most
// cap(queue) wait for a slot; past that a request is turned away at once
// rather than piling up.
type admission struct {
	slots chan struct{}
	queue chan struct{}
}

// newAdmission admits running executions at once. The server passes the
// Service's cap (Service.MaxConcurrent) unless Options.MaxRunning names
// another, so that one number, `serve --max-running`, bounds both the
// executions admitted and the sandboxes started.
func newAdmission(running, waiting int) *admission {
	return &admission{slots: make(chan struct{}, running), queue: make(chan struct{}, waiting)}
}

// acquire waits for a slot, at most until ctx ends, and returns how long it
// waited and the release function.
func (a *admission) acquire(ctx context.Context) (time.Duration, func(), error) {
	start := time.Now()
	select {
	case a.slots <- struct{}{}:
		return 0, a.release, nil
	default:
	}
	select {
	case a.queue <- struct{}{}:
	default:
		return 0, nil, errBusy
	}
	defer func() { <-a.queue }()
	select {
	case a.slots <- struct{}{}:
		return time.Since(start), a.release, nil
	case <-ctx.Done():
		return time.Since(start), nil, ctx.Err()
	}
}

func (a *admission) release() { <-a.slots }

// inFlight and queued are for the metrics.
func (a *admission) inFlight() int { return len(a.slots) }
func (a *admission) queued() int   { return len(a.queue) }
