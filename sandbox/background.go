package sandbox

import (
	"context"
	"sync"
)

// Background counts work that outlives the call that started it: warm
// starts and discards, the teardown of finished runs. Unlike a
// sync.WaitGroup it may be waited on while new work is added, which a
// long-lived runner does all the time. The zero value is ready.
type Background struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil means "closed"
}

// Go starts f in its own goroutine and counts it until it returns.
func (b *Background) Go(f func()) {
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

func (b *Background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	if b.n == 0 {
		close(b.idle)
	}
}

// Wait returns once no work is counted, or with ctx's error.
func (b *Background) Wait(ctx context.Context) error {
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
