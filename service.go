package sandboxrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/catalog"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/internal/resultcache"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
	"github.com/sandboxrun/sandboxrun/usage"
)

// Config is what a Service is built from. Every front end (the CLI, the HTTP
// server, the MCP server) fills one from its own flags; the zero value of
// each optional field is a safe default.
type Config struct {
	// SkillRoots are the folders skills are found in, by name. Required.
	SkillRoots []string
	// Strict refuses skills that break an Agent Skills spec rule
	// sandboxrun would otherwise run with a warning.
	Strict bool
	// Warn receives what the Service tells about a skill without refusing
	// it (a shadowed duplicate, a name unlike its folder); nil logs it.
	Warn func(msg string)
	// AllowSkillPaths lets a request name a skill by a path to its folder
	// instead of by name. Only a local, trusted front end (the CLI) sets it:
	// a remote caller never names host paths.
	AllowSkillPaths bool
	// Policy is the operator's policy; nil means the built-in one.
	Policy *policy.Operator
	// OCIRuntime asks for an engine runtime (runsc, kata); the policy's
	// runtime, when set, must agree.
	OCIRuntime string
	// Pip says where image builds find Python packages.
	Pip images.PipConfig
	// Audit receives one record per request, refusals included; nil keeps
	// no log.
	Audit *audit.Log
	// Observer is told about every request's outcome (metrics); nil
	// observes nothing.
	Observer Observer
	// Logger logs what the Service does; nil discards.
	Logger *slog.Logger
	// MaxConcurrent bounds sandboxes running at once (default
	// DefaultMaxConcurrent). It is the one cap: the Service admits as many
	// runs as this, from every front end (HTTP, MCP over HTTP or stdio, a
	// library caller), and `serve --max-running` sets it.
	MaxConcurrent int
	// MaxQueued bounds runs waiting for a slot (0: DefaultMaxQueued;
	// NoQueue: none; below NoQueue is an error); past it a run is refused
	// at once with ErrBusy. QueueWait is the longest a run waits (default
	// DefaultQueueWait), then ErrBusy too.
	MaxQueued int
	QueueWait time.Duration
	// WarmPool caps the containers the Docker backend keeps started ahead
	// of time, shared by configurations in proportion to their recent
	// demand (docker.WithWarmPoolByDemand); a configuration unused for
	// WarmIdle (default 5 minutes) holds none. 0, the zero Config, is off:
	// a library user opts in. `sandboxrun serve` and `mcp` set it from
	// --warm-pool or the policy's docker.warm_pool.max (default 4).
	WarmPool int
	WarmIdle time.Duration
	// Progress receives image build progress; nil discards it.
	Progress io.Writer
	// Images is the engine images are built, found and pruned on
	// (backends.Images: the host's Docker engine, whichever backend runs
	// the sandboxes). Nil: an image operation fails with
	// images.ErrNoDocker, and a run needs its backend to find images
	// (sandbox.ImageChecker).
	Images *images.Client
	// Runner is the sandbox backend, made by the caller (docker.New, a
	// test's fake). When nil, Backend makes it on first use.
	Runner Engine
	// Backend makes the sandbox backend on first use, from this Config
	// as New completed it (Policy and OCIRuntime the checked ones,
	// MaxConcurrent and WarmIdle defaulted): backends.New picks the one
	// the policy selects. Neither Runner nor Backend set, a run is an
	// error; listing skills and refusals still work.
	Backend func(Config) (Engine, error)
	// SessionsRoot is the folder sessions are kept in (serve --sessions);
	// empty takes the policy's sessions.root, and neither keeps none.
	SessionsRoot string
	// UsageState is the file each token label's usage is kept in
	// (UsageStatePath of serve --state), so quotas hold across a restart
	// or a kill; empty keeps it in memory.
	UsageState string
	// Replica, when set, is this server's name among several (serve
	// --replica): the sessions it creates carry it in their ids, and ids
	// naming another replica are not looked up here. Empty: one server.
	Replica string
	// UsageEveryMin is the shortest interval between a run's live usage
	// samples (Request.UsageEvery) a caller may ask; 0 is
	// DefaultUsageEveryMin, and below sandbox.MinUsageEvery is an error.
	UsageEveryMin time.Duration
}

// Engine is what the Service needs of a backend: run one execution, and
// release what it holds. What else a backend can do (sandbox.Pinger,
// sandbox.ImageChecker, sandbox.Reaper, sandbox.PoolReporter,
// sandbox.ImagePreparer) the Service asks with a type assertion.
type Engine interface {
	sandbox.Runner
	Close() error
}

// DefaultMaxConcurrent is how many sandboxes a Service runs at once unless
// Config.MaxConcurrent says otherwise: `serve --max-running`'s default too.
const DefaultMaxConcurrent = 4

// ErrNoBackend means a run was asked of a Service configured with neither
// Config.Runner nor Config.Backend.
var ErrNoBackend = errors.New("no sandbox backend configured")

// Observer learns the outcome of each request; the server's metrics
// implement it. Calls may come from many goroutines at once.
type Observer interface {
	Observe(o Observed)
}

// Observed is one request's outcome, for an Observer. Nothing in it is
// text a caller chose: Skill names an operator skill only (an uploaded
// skill's name is its owner's, and callers may upload and delete names
// without end), so a metrics page shows nothing of one tenant to another
// and its label set stays as small as the operator's skills.
type Observed struct {
	// Skill is the operator skill's name; "" for an uploaded skill and
	// for a request refused before its skill resolved.
	Skill string
	// Source is SourceOperator or SourceUploaded once the skill resolved,
	// "" before.
	Source   string
	Outcome  Outcome
	Duration time.Duration
}

// Service performs every operation sandboxrun offers, for any front end:
// list and activate skills, run a script, a command or inline Python, build
// an image. It owns the engine connection, the operator policy, warm pools
// and the audit log. It is safe for concurrent use; Close it when done.
type Service struct {
	cfg        Config
	pol        *policy.Operator
	ociRuntime string
	log        *slog.Logger

	admit *admission // every run's slot, whichever front end asked

	mu        sync.Mutex
	engine    Engine // created on first use unless Config.Runner is set
	connected bool   // pinged and reaped once

	cat      *catalog.Catalog   // operator skills, uploads, pins, digests
	sessions *session.Store     // nil when the Service keeps none
	cache    *resultcache.Cache // Results of deterministic runs (policy cache)
	usage    *usage.Store       // each token label's use, against its quotas
	owners   tenantOwners       // each token label's owner, for its stored bytes
	sessErr  error              // why sessions are refused, when they are

	stop     chan struct{} // closed by Close: upkeep ends
	upkept   chan struct{} // closed when upkeep has ended
	stopOnce sync.Once

	// loaded, when set (by the tests), is called at every skill load.
	loaded func()
}

func (s *Service) onLoad() {
	if s.loaded != nil {
		s.loaded()
	}
}

// New checks the configuration and returns a Service. It does not contact
// the engine: refusals never wait for Docker, and the engine is connected
// (and the sandboxes of dead owners reaped) on the first run.
func New(cfg Config) (*Service, error) {
	if len(cfg.SkillRoots) == 0 {
		return nil, errors.New("configure service: no skill roots: give at least one folder of skills")
	}
	pol := cfg.Policy
	if pol == nil {
		pol = policy.BuiltinPolicy()
	}
	rt, err := pol.CheckRuntime(cfg.OCIRuntime)
	if err != nil {
		return nil, refused(err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.MaxConcurrent < 0 || cfg.MaxQueued < NoQueue {
		return nil, errors.New("configure service: a negative MaxConcurrent or MaxQueued: give 0 for the default, a positive number, or NoQueue (MaxQueued only) for no queue")
	}
	switch cfg.MaxQueued {
	case 0:
		cfg.MaxQueued = DefaultMaxQueued
	case NoQueue:
		cfg.MaxQueued = 0
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.UsageEveryMin, err = usageEveryMin(cfg.UsageEveryMin); err != nil {
		return nil, err
	}
	if cfg.WarmPool > 0 && cfg.WarmIdle == 0 {
		cfg.WarmIdle = 5 * time.Minute
	}
	cfg.Policy, cfg.OCIRuntime, cfg.Logger = pol, rt, log
	svc := &Service{cfg: cfg, pol: pol, ociRuntime: rt, log: log, engine: cfg.Runner, cache: resultcache.New(time.Now),
		admit: newAdmission(cfg.MaxConcurrent, cfg.MaxQueued, cfg.QueueWait, pol.Tenants.FairShareOn(), tenantCaps(pol))}
	if svc.usage, err = openUsage(cfg, pol); err != nil {
		return nil, err
	}
	svc.cat, err = catalog.Open(catalog.Config{Roots: cfg.SkillRoots, Strict: cfg.Strict, AllowPaths: cfg.AllowSkillPaths,
		Policy: pol, SessionsRoot: sessionsRoot(cfg, pol), Warn: cfg.Warn, Logger: log, OnLoad: svc.onLoad})
	if err != nil {
		return nil, err
	}
	svc.sessions, err = openSessions(cfg, pol)
	switch {
	case errors.Is(err, ErrNoSessions):
		svc.sessErr, svc.sessions = err, nil
	case err != nil:
		return nil, err
	}
	svc.stop, svc.upkept = make(chan struct{}), make(chan struct{})
	go svc.upkeep(svc.stop, svc.upkept)
	return svc, nil
}

// Policy is the operator policy the Service enforces.
func (s *Service) Policy() *policy.Operator { return s.pol }

// runner returns the engine, connecting on first use: a ping, so an
// unreachable daemon is reported as such rather than as the failure of
// whichever step needed it first, and the removal of containers whose owner
// process died (a crashed host, SIGKILL), so a restarted server reclaims
// what its predecessor left. Once that succeeded, later calls cost nothing.
func (s *Service) runner(ctx context.Context) (Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.connected {
		return s.engine, nil
	}
	eng, err := s.makeEngine()
	if err != nil {
		return nil, err
	}
	if p, ok := eng.(sandbox.Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			return nil, err
		}
	}
	if r, ok := eng.(sandbox.Reaper); ok {
		reaped, err := r.Reap(ctx, sandbox.ReapOptions{OnlyDeadOwners: true})
		switch {
		case errors.Is(err, sandbox.ErrUnavailable):
			return nil, err
		case err != nil:
			s.log.Debug("reap at start failed", "err", err)
		case len(reaped) > 0:
			s.log.Info("removed leaked sandboxes", "count", len(reaped))
		}
	}
	if dirs, err := egressrun.ReapFolders("", false); err != nil || len(dirs) > 0 {
		s.log.Info("removed leaked egress proxy folders", "count", len(dirs), "err", err)
	}
	s.connected = true
	return eng, nil
}

// Ready reports whether runs can start: the engine answers and the runner
// image is present.
func (s *Service) Ready(ctx context.Context) error {
	eng, err := s.runner(ctx)
	if err != nil {
		return err
	}
	if _, err := s.lookupImage(eng)(ctx, RunnerImage()); err != nil {
		return fmt.Errorf("runner image: %w", err)
	}
	return nil
}

// Replica is this Service's name among several (Config.Replica); "" for
// one server. Front ends name their own ids after it.
func (s *Service) Replica() string { return s.cfg.Replica }

// Observer is the one Observer of the Service's outcomes (Config.Observer,
// nil for none): a front end that serves metrics serves this one's.
func (s *Service) Observer() Observer { return s.cfg.Observer }

// MaxConcurrent is how many sandboxes the Service runs at once.
func (s *Service) MaxConcurrent() int { return s.cfg.MaxConcurrent }

// Close removes warm containers and releases the engine. Runs must have
// returned.
func (s *Service) Close() error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stop)
		<-s.upkept
		if s.sessions != nil {
			err = s.sessions.Close()
		}
		if st, serr := s.cat.Uploads(); serr == nil {
			err = errors.Join(err, st.Close())
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engine == nil {
		return err
	}
	err = errors.Join(err, s.engine.Close())
	s.engine, s.connected = nil, false
	return err
}

// PoolStats are the warm pool's figures (all zero before the first run, or
// when the backend keeps no pool), for metrics.
func (s *Service) PoolStats() sandbox.PoolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.engine.(sandbox.PoolReporter); ok {
		return p.PoolStats()
	}
	return sandbox.PoolStats{}
}

// lookupImage is how the Service finds an image where eng starts its
// sandboxes: eng's own lookup (an API call of about a millisecond), else
// Config.Images's.
func (s *Service) lookupImage(eng Engine) func(ctx context.Context, ref string) (string, error) {
	if c, ok := eng.(sandbox.ImageChecker); ok {
		return c.CheckImage
	}
	return func(ctx context.Context, ref string) (string, error) {
		id, _, err := s.cfg.Images.Inspect(ctx, ref)
		return id, err
	}
}
