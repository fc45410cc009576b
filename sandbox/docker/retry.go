package docker

import (
	"context"
	"errors"
	"sync"
	"time"
)

// retrier removes, once the engine answers again, what runs left while it
// could not be reached: a container whose removal failed with the engine
// away would otherwise stay for good, its owner (this process) being alive
// so that no reaper takes it. It tries with a backoff until it succeeds or
// the runner closes; what is left then is a dead owner's for Reap.
type retrier struct {
	mu      sync.Mutex
	pending []*box
	running bool
	stop    chan struct{}
	closed  bool
}

func newRetrier() *retrier { return &retrier{stop: make(chan struct{})} }

// Backoff of the retries: from retryFirst, doubling up to retryMax.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// add queues b for another removal, starting the retry loop on d's
// background when none runs.
func (r *retrier) add(d *Runner, b *box) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.pending = append(r.pending, b)
	if r.running {
		return
	}
	r.running = true
	d.bg.Go(func() { r.loop(d) })
}

func (r *retrier) loop(d *Runner) {
	wait := retryFirst
	for {
		select {
		case <-r.stop:
			r.mu.Lock()
			r.running = false
			r.mu.Unlock()
			return
		case <-time.After(wait):
		}
		r.mu.Lock()
		todo := r.pending
		r.pending = nil
		r.mu.Unlock()
		var again []*box
		for _, b := range todo {
			if err := b.remove(context.Background()); errors.Is(err, ErrUnavailable) {
				again = append(again, b)
			} else if err == nil {
				d.log.Info("removed what a run left while the engine was unreachable", "run_id", b.runID)
			}
		}
		r.mu.Lock()
		r.pending = append(r.pending, again...)
		if len(r.pending) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		wait = min(2*wait, retryMax)
		if len(again) < len(todo) {
			wait = retryFirst // the engine is back
		}
	}
}

// close stops the retries; Close then waits for the loop to return.
func (r *retrier) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
}
