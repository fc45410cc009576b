package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
)

// teardown is what is left of a run once its Result is known: its sandbox.
type teardown struct {
	box Box
	log *slog.Logger
	// decoded, when set, closes once frame decoding has ended: the
	// stream is closed by End, and the decoder must be done before the
	// sandbox goes.
	decoded chan struct{}
	// kill: the sandbox is killed first, as it has no run to finish (a
	// start whose caller left, a run without a report).
	kill bool
}

// teardown waits for the sandbox to end and removes it, detached from
// ctx's cancellation (each driver call has its own timeout). Failures are
// logged: a sandbox left behind carries its owner for Reap.
func (e *Engine) teardown(ctx context.Context, t *teardown) error {
	ctx = context.WithoutCancel(ctx)
	var killErr error
	if t.kill {
		killErr = t.box.Kill(ctx)
	}
	_, endErr := t.box.End(ctx)
	endErr = errors.Join(killErr, endErr)
	if t.decoded != nil {
		<-t.decoded
	}
	if endErr != nil {
		t.log.Warn("end of sandbox", "error", endErr)
	}
	err := t.box.Remove(ctx)
	if err != nil {
		t.log.Warn("remove sandbox", "error", err)
	}
	return errors.Join(endErr, err)
}

// later tears down a run whose Result is complete without holding up the
// caller: in the background while fewer than cap(e.teardowns) teardowns
// are there, else at once, so that no more finished sandboxes than that
// wait for removal. Close waits for the background.
func (e *Engine) later(ctx context.Context, t *teardown) {
	select {
	case e.teardowns <- struct{}{}:
		e.bg.run(func() {
			defer func() { <-e.teardowns }()
			_ = e.teardown(ctx, t) // logged
		})
	default:
		_ = e.teardown(ctx, t) // logged
	}
}

// background counts work that outlives the call that started it: warm
// starts and discards, and the teardown of finished runs. Unlike a
// sync.WaitGroup it may be waited on while new work is added, which a
// long-lived engine does all the time.
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
