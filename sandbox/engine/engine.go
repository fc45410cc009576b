package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// Engine runs Specs through one Driver. It is a sandbox.Runner, safe for
// concurrent use.
type Engine struct {
	d              Driver
	log            *slog.Logger
	image          string
	version        string
	ids            sandbox.Identity
	initGrace      time.Duration
	backstopMargin time.Duration
	prestart       bool
	sem            chan struct{}
	// teardowns bounds the finished runs removed in the background; past
	// it a run removes its own sandbox before it returns.
	teardowns chan struct{}
	capacity  capacity
	pool      *pool
	bg        sandbox.Background
	// slots are the egress slots of warm sandboxes, by Box.
	slots sync.Map
}

// The Engine's abilities, which a backend hands on.
var (
	_ sandbox.Runner       = (*Engine)(nil)
	_ sandbox.SpecChecker  = (*Engine)(nil)
	_ sandbox.PoolReporter = (*Engine)(nil)
)

// Config is what an Engine needs besides its Driver.
type Config struct {
	// Options are the tunables every backend shares; validated by the
	// backend.
	sandbox.Options
	// Identity is the user the sandboxes run as, for the host folders'
	// readability check.
	Identity sandbox.Identity
	// Prestart lets warm sandboxes start python3 ahead of their job
	// (sandbox.Prelude).
	Prestart bool
	// Now is the clock of a pool sized by demand and of CapacityTTL.
	// Default: time.Now.
	Now func() time.Time
	// CapacityTTL is how long the driver's Capacity is kept (a cluster's
	// nodes come and go). Zero: for the Engine's life.
	CapacityTTL time.Duration
}

// New returns an Engine running through d.
func New(d Driver, cfg Config) *Engine {
	e := &Engine{
		d:              d,
		log:            cfg.Logger,
		image:          cfg.DefaultImage(),
		version:        cfg.Version,
		ids:            cfg.Identity,
		initGrace:      cfg.InitGrace,
		backstopMargin: cfg.BackstopMargin,
		prestart:       cfg.Prestart,
		sem:            make(chan struct{}, cfg.MaxConcurrent),
		teardowns:      make(chan struct{}, cfg.MaxConcurrent),
		capacity:       capacity{ttl: cfg.CapacityTTL, now: cfg.Now},
	}
	if e.capacity.now == nil {
		e.capacity.now = time.Now
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.pool = newPool(e, cfg.Sizer(cfg.Now), cfg.WarmMaxIdle)
	if e.pool != nil {
		// Egress slots of a process that was killed before it closed
		// them.
		if gone, err := ReapSlots(slotRoot); err != nil || len(gone) > 0 {
			e.log.Info("removed egress slots of processes that are gone", "slots", gone, "error", err)
		}
	}
	return e
}

// Run executes spec in a sandbox of its own (new, or started ahead by the
// warm pool) and returns as soon as sandbox-init has reported the script's
// end: the sandbox's end and removal then go on in the background
// (WaitIdle and Close wait for them). A run that ends without a report
// (cancelled, killed, failed to start) removes its sandbox before it
// returns, under context.WithoutCancel.
//
// A script that fails is not an error: it is a Result with Success false.
// A nil Result comes only with a refusal before the driver starts anything
// (the error matches sandbox.ErrInvalidSpec, ErrBeyondHost,
// ErrSkillUnreadable, ErrWorkspace, or the driver's own refusal) or with
// ctx ending while the run waited for a slot. Otherwise the Result is
// filled as far as the run got and its Error says why it failed.
func (e *Engine) Run(ctx context.Context, spec sandbox.Spec) (res *sandbox.Result, err error) {
	generatedID, err := sandbox.PrepareSpec(&spec, e.image, e.ids)
	if err != nil {
		return nil, err
	}
	if spec.WorkspaceWritable && spec.Changes == nil {
		return nil, fmt.Errorf("%w: a writable workspace needs Spec.Changes, which applies what the run changed (a sandboxrun.Service sets it)", sandbox.ErrInvalidSpec)
	}
	if err := e.d.Check(ctx, &spec); err != nil {
		return nil, err
	}
	if err := e.CheckSpec(ctx, spec); err != nil {
		return nil, err
	}
	ctx, sp := telemetry.Start(ctx, "sandbox.run", attribute.String("container.runtime", e.d.Name()),
		attribute.String("sandboxrun.run_id", spec.RunID), attribute.String("container.image.name", spec.Image))
	defer func() { telemetry.End(sp, err, e.d.Name()) }()
	_, queued := telemetry.Start(ctx, "sandbox.queue")
	res, end, err := sandbox.Begin(ctx, e.sem, &spec)
	telemetry.End(queued, err, e.d.Name())
	if err != nil {
		return nil, err
	}
	defer end(&err)
	first, began := spec, *res
	err = e.execute(ctx, &spec, res, generatedID)
	if errors.Is(err, ErrRetry) {
		// Nothing ran: the same run once more, on a new sandbox.
		e.log.Warn("sandbox could not take the run; running it again", "skill", spec.Skill, "error", err)
		spec, *res = first, began
		err = e.execute(ctx, &spec, res, generatedID)
	}
	return res, err
}

// ErrRetry is a Bind (or ReportChecker) error that says nothing of the
// run began in the sandbox and the same run may go to a new one (a driver that turned a way
// of sharing the workspace off for good, say). The engine tries once more.
var ErrRetry = errors.New("the sandbox could not take the run")

// execute is one sandbox's life for spec: take a warm one or start one,
// bind the run, send the job, read frames until the report, then tear the
// sandbox down, in the background when the report came.
func (e *Engine) execute(ctx context.Context, spec *sandbox.Spec, res *sandbox.Result, generatedID bool) (err error) {
	began := time.Now()
	tmpl := Template(spec, e.prestart)
	keyTmpl := keyed(tmpl)
	plan, err := e.d.Plan(ctx, &keyTmpl)
	if err != nil {
		return err
	}
	key := e.pool.key(plan)
	box := e.pool.take(ctx, key)
	e.pool.counts(key, box != nil)
	warm := box != nil
	sp := trace.SpanFromContext(ctx)
	sp.SetAttributes(attribute.Bool("sandboxrun.warm", warm))
	if warm && generatedID {
		// The sandbox's own id names the run, so labels, env and the
		// Result agree.
		spec.RunID, res.ID = box.RunID(), box.RunID()
	}
	log := e.log.With("skill", spec.Skill, "run_id", spec.RunID, "warm", warm)
	var (
		tail    *teardown
		decoded chan struct{} // frame decoding's end, once the job went
		ended   bool          // End was called
	)
	defer func() {
		switch {
		case box == nil:
		case tail != nil:
			e.later(ctx, tail)
		default:
			// No report: whatever the sandbox still does is of no use.
			err = errors.Join(err, e.teardown(ctx, &teardown{box: box, log: log, kill: true, decoded: decoded, ended: ended}))
		}
	}()
	if box == nil {
		if box, err = e.start(ctx, spec, plan); err != nil {
			return err
		}
	}
	res.Started = true
	if warm && spec.EgressSocket != "" && !plan.Relays {
		if err := e.joinSlot(box, spec); err != nil {
			return err
		}
	}
	// The next run like this one finds a sandbox waiting; it starts once
	// this run has its Result, not to compete with the script.
	defer e.pool.refill(key, tmpl, plan)
	run := &Run{Spec: spec, Job: sandbox.JobFor(spec, e.version, e.initGrace), Output: sandbox.NewOutput(spec), Plan: plan, Warm: warm}
	if run.Held() {
		run.Job.HoldDir = sandbox.WorkspaceDir
	}
	if err := box.Bind(ctx, run); err != nil {
		return err
	}
	a := e.await(ctx, box, run, log)
	decoded, ended = a.decoded, a.ended
	if c, ok := box.(ReportChecker); ok && a.answered {
		if err := c.CheckReport(run, a.Report); err != nil {
			// Nothing of the script ran: the sandbox goes before the
			// run is tried again (it may carry the run's name).
			return err
		}
	}
	if a.answered {
		tail = &teardown{box: box, log: log, decoded: a.decoded, ended: a.ended}
	}
	a.Duration = time.Since(began)
	run.Output.Finish(res, a.Outcome)
	telemetry.EventAt(sp, "first output byte", run.Output.FirstOutputAt())
	telemetry.EventAt(sp, "result frame", run.Output.ReportAt())
	if run.Held() && a.Report != nil {
		res.WorkspaceUsedBytes = a.Report.HoldUsedBytes + run.WorkspaceBase
		res.WorkspaceFull = a.Report.HoldFreeBytes < sandbox.PageSize
		res.Files = a.files
	}
	log.Debug("sandbox finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"oom_killed", res.OOMKilled, "duration_ms", res.DurationMS,
		"prestarted", a.Report != nil && a.Report.Prestarted)
	return a.err
}

// start has the driver start a sandbox for spec. The start is not
// cancelled with the run: a runtime or engine may finish a create whose
// caller went away, and the sandbox would outlive the run unseen. It is
// short and bounded by the driver; the run's cancellation is looked at
// once it returns, and what it made is removed by the caller.
func (e *Engine) start(ctx context.Context, spec *sandbox.Spec, plan Plan) (Box, error) {
	box, err := e.d.Start(context.WithValue(context.WithoutCancel(ctx), callerKey{}, ctx), spec, plan)
	if err != nil {
		return box, err
	}
	if err := ctx.Err(); err != nil {
		return box, fmt.Errorf("run cancelled: %w", err)
	}
	return box, nil
}

// CheckSpec refuses what the driver's host cannot honour (CPUs, memory, an
// engine runtime), asking the host once per Engine: the check Run makes
// before anything starts, for an explanation to make the same. With no
// operator ceiling, this is the ceiling: a run never gets more than its
// host has.
func (e *Engine) CheckSpec(ctx context.Context, spec sandbox.Spec) error {
	c, err := e.capacity.get(ctx, e.d)
	if err != nil {
		return err
	}
	return sandbox.CheckHost(&spec, c)
}

// PoolStats reports on the warm pool.
func (e *Engine) PoolStats() sandbox.PoolStats {
	if e.pool == nil {
		return sandbox.PoolStats{}
	}
	s := e.pool.Stats()
	return sandbox.PoolStats{Size: s.Size, Ready: s.Ready, Hits: s.Hits, Misses: s.Misses}
}

// Pool is the warm pool, nil when it is off: for tests and diagnostics
// that look inside it.
func (e *Engine) Pool() *warm.Pool[Box] {
	if e.pool == nil {
		return nil
	}
	return e.pool.Pool
}

// WaitIdle waits until the background work of finished runs (teardowns,
// refills) is done, or ctx ends.
func (e *Engine) WaitIdle(ctx context.Context) error { return e.bg.Wait(ctx) }

// Close removes the warm pool's sandboxes and waits for the background
// work, or for ctx.
func (e *Engine) Close(ctx context.Context) error {
	e.pool.close()
	return e.bg.Wait(ctx)
}
