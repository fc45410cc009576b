package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// ReapEvery is how often a serving process removes the sandboxes of dead
// owners (another process on the engine that was killed).
const ReapEvery = time.Minute

// KeepReaping connects svc to its engine at once, which removes what a
// killed predecessor left (its sandboxes and their workspace volumes)
// without waiting for a first run, then reaps dead owners' sandboxes every
// interval until ctx ends. An engine that is away is tried again at the
// next tick.
func KeepReaping(ctx context.Context, svc *sandboxrun.Service, every time.Duration, log *slog.Logger) {
	if err := svc.Ready(ctx); err != nil {
		log.Warn("the engine is not ready at start; leftovers of a killed server are reaped once it is", "err", err)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		r, err := svc.Reap(cctx, sandbox.ReapOptions{OnlyDeadOwners: true})
		cancel()
		switch {
		case err != nil:
			log.Debug("reap", "err", err)
		case len(r.Sandboxes) > 0:
			log.Info("removed sandboxes of dead owners", "count", len(r.Sandboxes))
		}
	}
}
