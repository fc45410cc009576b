package docker

import (
	"context"
	"sync"
)

// background counts work a runner started that outlives the call that
// started it: warm-pool starts and removals, and the teardown of finished
// sandboxes. Unlike a sync.WaitGroup it may be waited on while new work is
// added, which a long-lived runner does all the time.
type background struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil means "closed"
}

// run starts f in its own goroutine and counts it until it returns.
func (b *background) run(f func()) {
	b.mu.Lock()
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	b.mu.Unlock()
	go func() {
		defer b.done()
		f()
	}()
}

func (b *background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	if b.n == 0 {
		close(b.idle)
	}
}

// wait returns once no work is counted, or with ctx's error.
func (b *background) wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		idle, n := b.idle, b.n
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
			// More work may have started since: look again.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
