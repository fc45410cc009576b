package engine

import (
	"context"
	"errors"
	"log/slog"
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
	// ended: End was called already (Box: exactly once), and the sandbox
	// has ended.
	ended bool
}

// teardown waits for the sandbox to end and removes it, detached from
// ctx's cancellation (each driver call has its own timeout). Failures are
// logged: a sandbox left behind carries its owner for Reap.
func (e *Engine) teardown(ctx context.Context, t *teardown) error {
	ctx = context.WithoutCancel(ctx)
	var killErr, endErr error
	if !t.ended {
		if t.kill {
			killErr = t.box.Kill(ctx)
		}
		endErr = e.end(ctx, t.box)
	}
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
	e.closeSlot(t.box)
	return errors.Join(endErr, err)
}

// later tears down a run whose Result is complete without holding up the
// caller: in the background while fewer than cap(e.teardowns) teardowns
// are there, else at once, so that no more finished sandboxes than that
// wait for removal. Close waits for the background.
func (e *Engine) later(ctx context.Context, t *teardown) {
	select {
	case e.teardowns <- struct{}{}:
		e.bg.Go(func() {
			defer func() { <-e.teardowns }()
			_ = e.teardown(ctx, t) // logged
		})
	default:
		_ = e.teardown(ctx, t) // logged
	}
}

// end lets a sandbox that was killed or reported go: Settle where the box
// has it, else End.
func (e *Engine) end(ctx context.Context, b Box) error {
	if s, ok := b.(Settler); ok {
		return s.Settle(ctx)
	}
	_, err := b.End(ctx)
	return err
}
