package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// pool keeps sandboxes started ahead of their runs, with sandbox-init
// waiting for its job, keyed by the driver's Key of their template. The
// counting, waiting and idle timers are warm.Pool's. A warm sandbox is the
// sandbox a cold run of the same template gets, but for its run id; what
// belongs to one run alone (its workspace's view, its egress socket) is
// given by Bind when a run takes it. Each serves exactly one run and is
// removed after it like any other; idle ones are removed after maxIdle and
// by Close, and their owner labels let a reaper find them if the process
// dies.
type pool struct {
	*warm.Pool[Box]
	e *Engine
}

func newPool(e *Engine, sizer *warm.Sizer, maxIdle time.Duration) *pool {
	if sizer == nil {
		return nil
	}
	p := &pool{e: e}
	p.Pool = warm.NewPool(warm.PoolConfig[Box]{
		Sizer: sizer, MaxIdle: maxIdle, Discard: p.discard,
		// Starts and discards count with the engine's other background
		// work, which Close waits for.
		Go: e.bg.Go,
	})
	return p
}

// Template is what a run's sandbox is made of, never the run's command,
// input or variables: nothing of one request reaches a sandbox that
// serves another. With prestart, the interpreter its prelude may start
// (sandbox.Prelude) comes along.
func Template(spec *sandbox.Spec, prestart bool) sandbox.Spec {
	tmpl := sandbox.Spec{
		Skill: spec.Skill, SkillVersion: spec.SkillVersion, SkillDir: spec.SkillDir,
		Workspace: spec.Workspace, WorkspaceWritable: spec.WorkspaceWritable,
		EgressSocket: spec.EgressSocket, EgressCA: spec.EgressCA,
		Image: spec.Image, Limits: spec.Limits,
	}
	if prestart && len(spec.Argv) > 0 {
		tmpl.Argv = []string{spec.Argv[0]}
	}
	return tmpl
}

// key is plan's key when the pool is on.
func (p *pool) key(plan Plan) string {
	if p == nil {
		return ""
	}
	return plan.Key
}

var errWarmEnded = errors.New("warm sandbox ended while it waited")

// take returns a warm sandbox of key that still waits, or nil.
func (p *pool) take(ctx context.Context, key string) Box {
	if p == nil {
		return nil
	}
	return p.Take(ctx, key, func(_ context.Context, b Box) error {
		if !b.Alive() {
			p.e.log.Warn(errWarmEnded.Error(), "run_id", b.RunID())
			return errWarmEnded
		}
		return nil
	})
}

// refill tops the pool up for the template's key.
func (p *pool) refill(key string, tmpl sandbox.Spec, plan Plan) {
	if p == nil || key == "" {
		return
	}
	p.Refill(key, func(ctx context.Context) (Box, error) {
		t := tmpl
		b, err := p.start(ctx, &t, plan)
		if err != nil && ctx.Err() == nil {
			p.e.log.Warn("start warm sandbox", "error", err)
		}
		return b, err
	})
}

func (p *pool) start(ctx context.Context, tmpl *sandbox.Spec, plan Plan) (Box, error) {
	id, err := sandbox.NewRunID()
	if err != nil {
		return nil, err
	}
	tmpl.RunID = id
	var sl *slot
	if tmpl.EgressSocket != "" && !plan.Relays {
		// The run's proxy does not exist yet: a slot stands in for it.
		if sl, err = newSlot(tmpl); err != nil {
			return nil, err
		}
	}
	// As for a run's start, the driver's start is not cut short when the
	// pool closes: an engine may finish a create whose caller went away
	// after the removal by name found nothing, and the sandbox would
	// outlive the process. A start is short; ctx is looked at after it.
	dctx := context.WithValue(context.WithValue(context.WithoutCancel(ctx), callerKey{}, ctx), aheadKey{}, true)
	b, err := p.e.d.Start(dctx, tmpl, plan)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("warm start cancelled: %w", ctx.Err())
	}
	if b != nil && sl != nil {
		p.e.slots.Store(b, sl)
	} else if sl != nil {
		_ = sl.close()
	}
	if err != nil {
		if b != nil {
			p.discard(b)
		}
		return nil, err
	}
	// What the run would ask while its script runs is asked now.
	_ = b.ImageID(ctx)
	// sandbox-init reads the prelude at once and starts the interpreter,
	// so the next run pays no interpreter start.
	if msg, ok := sandbox.Prelude(tmpl, p.e.version); ok {
		if _, err := b.Input().Write(msg); err != nil {
			p.discard(b)
			return nil, err
		}
	}
	return b, nil
}

// discard removes a sandbox no run will use.
func (p *pool) discard(b Box) {
	ctx := context.Background()
	_ = b.Kill(ctx)
	if err := p.e.end(ctx, b); err != nil {
		p.e.log.Warn("end of warm sandbox", "run_id", b.RunID(), "error", err)
	}
	if err := b.Remove(ctx); err != nil {
		p.e.log.Warn("remove warm sandbox", "run_id", b.RunID(), "error", err)
	}
	p.e.closeSlot(b)
}

func (p *pool) counts(key string, hit bool) {
	if p != nil && key != "" {
		p.Count(key, hit)
	}
}

func (p *pool) close() {
	if p != nil {
		p.Close()
	}
}
