package sandboxrun

import (
	"context"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// ReapEvery is how often a Service connected to its engine removes the
// sandboxes of dead owners (another process on the engine that was
// killed), whichever front end it serves.
const ReapEvery = time.Minute

// upkeep is the Service's own work while it lives, the same under every
// front end (serve, mcp, a library): sessions idle past their TTL are
// removed every sweepInterval, and once the engine is connected (a run,
// Ready) the sandboxes of dead owners every ReapEvery. A Service that
// never ran asks the engine nothing. It returns when stop closes.
func (s *Service) upkeep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel() // a reap in flight ends with the Service
	}()
	reap := time.NewTicker(ReapEvery)
	defer reap.Stop()
	var sweep <-chan time.Time
	if s.sessions != nil {
		t := time.NewTicker(sweepInterval(s.sessions.Limits().TTL))
		defer t.Stop()
		sweep = t.C
	}
	for {
		select {
		case <-stop:
			return
		case <-sweep:
			if gone := s.sessions.Sweep(); len(gone) > 0 {
				s.log.Info("removed idle sessions", "count", len(gone))
			}
		case <-reap.C:
			s.reapDead(ctx)
		}
	}
}

// reapDead removes the sandboxes of dead owners when the engine is
// connected; an engine away is tried again at the next tick.
func (s *Service) reapDead(ctx context.Context) {
	s.mu.Lock()
	eng, connected := s.engine, s.connected
	s.mu.Unlock()
	r, ok := eng.(sandbox.Reaper)
	if !connected || !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, ReapEvery)
	defer cancel()
	reaped, err := r.Reap(ctx, sandbox.ReapOptions{OnlyDeadOwners: true})
	switch {
	case err != nil:
		s.log.Debug("reap", "err", err)
	case len(reaped) > 0:
		s.log.Info("removed sandboxes of dead owners", "count", len(reaped))
	}
}
