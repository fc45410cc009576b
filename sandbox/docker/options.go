package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/docker/docker/client"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// Option configures a Docker runner.
type Option func(*settings)

// settings holds every tunable of a Docker runner; defaultSettings is the
// one place where defaults live.
type settings struct {
	sandbox.Options // what every backend shares, with its defaults
	client          Client
	removeTimeout   time.Duration
	ownerPID        int
	prestart        bool
	ociRuntime      string
	usrVolumes      bool
	viewDir         string
}

func defaultSettings() settings {
	host, _ := os.Hostname() // an empty host only weakens reaping, never running
	return settings{
		Options:       sandbox.DefaultOptions(host),
		removeTimeout: 30 * time.Second,
		ownerPID:      os.Getpid(),
		prestart:      true,
		usrVolumes:    true,
		viewDir:       DefaultViewDir,
	}
}

// WithViewDir sets the host folder under which writable workspaces are
// mounted as copy-on-write views (wsview.go); "" turns views off, and
// writable workspaces are then copied in and out. Default:
// DefaultViewDir. Views need root in the engine's mount namespace; without
// it the runner copies, and logs why once.
func WithViewDir(dir string) Option { return func(s *settings) { s.viewDir = dir } }

// WithClient sets the Docker client. Default: a client configured from the
// environment (DOCKER_HOST...) with API version negotiation.
func WithClient(c Client) Option { return func(s *settings) { s.client = c } }

// WithLogger sets the structured logger. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.Logger = l } }

// WithMaxConcurrent bounds how many executions run at once; the others wait
// for a slot or give up when their context ends. As many finished
// executions may have their containers removed in the background (a run
// returns once its Result is complete). Default: 2 × NumCPU.
func WithMaxConcurrent(n int) Option { return func(s *settings) { s.MaxConcurrent = n } }

// WithVersion sets sandboxrun's version: it names the default image
// (sandboxrun/runner:<version>) and is visible to scripts as
// SANDBOXRUN_VERSION.
func WithVersion(v string) Option { return func(s *settings) { s.Version = v } }

// WithOCIRuntime runs every sandbox under the named engine runtime, e.g.
// "runsc" for gVisor or "kata" for Kata Containers, registered in the
// engine's daemon.json. A user-space kernel or a VM closes the kernel-escape
// gap a plain container leaves. Default: the engine's default runtime (runc).
// An unknown name fails each run with ErrInvalidSpec.
func WithOCIRuntime(name string) Option { return func(s *settings) { s.ociRuntime = name } }

// WithDefaultImage sets the image used when Spec.Image is empty. Default:
// sandboxrun/runner:<version>.
func WithDefaultImage(ref string) Option { return func(s *settings) { s.Image = ref } }

// WithBackstopMargin sets how long past timeout + grace the host waits for
// sandbox-init's report before it kills the container itself. Default: 5s.
func WithBackstopMargin(d time.Duration) Option { return func(s *settings) { s.BackstopMargin = d } }

// WithRemoveTimeout bounds container removal, which runs even after the
// caller's context is cancelled. Default: 30s.
func WithRemoveTimeout(d time.Duration) Option { return func(s *settings) { s.removeTimeout = d } }

// WithCallTimeout bounds every short Docker API call (create, start,
// inspect, kill...). Default: 30s.
func WithCallTimeout(d time.Duration) Option { return func(s *settings) { s.CallTimeout = d } }

// WithInitGrace sets how long sandbox-init waits between SIGTERM and SIGKILL
// when a script times out. Default: 2s.
func WithInitGrace(d time.Duration) Option { return func(s *settings) { s.InitGrace = d } }

// WithOwnerPID sets the process recorded as the owner of every container,
// which Reap uses to find leaked ones. Default: this process.
func WithOwnerPID(pid int) Option { return func(s *settings) { s.ownerPID = pid } }

// WithOwnerHost sets the host name recorded with the owner pid. Default:
// os.Hostname().
func WithOwnerHost(host string) Option { return func(s *settings) { s.OwnerHost = host } }

// WithWarmPool keeps size containers started ahead of time, waiting for
// their job, so that runs with a configuration seen before (same skill,
// workspace, image and limits) skip container creation and start. After
// each run the pool is topped up to size for that run's configuration, in
// the background once the run has its Result. Each container still serves
// exactly one run. Idle ones are removed after maxIdle, and all by Close.
// Default: off (size 0), which suits a process that runs once and exits.
// WithWarmPoolByDemand sizes the pool by demand instead; the last given
// wins.
func WithWarmPool(size int, maxIdle time.Duration) Option {
	return func(s *settings) { s.WarmSize, s.WarmMaxIdle, s.WarmByDemand = size, maxIdle, false }
}

// WithWarmPoolByDemand keeps warm containers like WithWarmPool, but as
// many for each configuration as its recent demand asks (its decayed
// arrival rate times the time a warm start takes, at least 1 while it was
// run within maxIdle; sandbox/warm ByDemand), at most max in all across
// configurations. After a run, idle containers the plan no longer wants
// are removed, those of other configurations too when they hold more than
// their share and the cap is reached; a configuration not run for maxIdle
// holds none once its containers expire. The first run of a configuration
// is cold; the next finds a container. Default: off (max 0).
func WithWarmPoolByDemand(max int, maxIdle time.Duration) Option {
	return func(s *settings) { s.WarmSize, s.WarmMaxIdle, s.WarmByDemand = max, maxIdle, true }
}

// WithPrestart says whether a warm container whose previous run of the
// same configuration used python3 starts python3 before its job arrives
// (and waits, having run nothing of the skill), so that a python3 job pays
// no interpreter start. The job sees what a fresh interpreter shows it
// (sys.argv, sys.path, __main__, sys.modules, its environment, tracebacks),
// except in /proc/self/cmdline and in frames below its module's (e.g.
// traceback.print_stack()). A job with caller variables, or for another
// program, starts as usual. Default: on; it has no effect without
// WithWarmPool.
func WithPrestart(on bool) Option { return func(s *settings) { s.prestart = on } }

// WithUsrVolumes says whether, on an engine whose storage driver is
// fuse-overlayfs, sandboxes mount a read-only copy of their image's /usr
// from a volume the engine fills once per image (usrvolume.go), so that
// the files an interpreter reads at start do not each go through the
// driver's user-space daemon. The first run of an image waits for the copy
// (seconds). Other storage drivers are unaffected. Default: on.
func WithUsrVolumes(on bool) Option { return func(s *settings) { s.usrVolumes = on } }

func (s *settings) validate() error {
	errs := s.Validate("containers") // the shared tunables (sandbox.Options)
	if s.removeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("remove timeout is %s: use a positive duration", s.removeTimeout))
	}
	if s.ownerPID <= 0 {
		errs = append(errs, fmt.Errorf("owner pid is %d: use a real process id", s.ownerPID))
	}
	return errors.Join(errs...)
}

// Runner runs each execution in its own container on a Docker engine. It is
// safe for concurrent use; create one and share it.
type Runner struct {
	client        Client
	ownClient     *client.Client // created by New, closed by Close
	log           *slog.Logger
	image         string
	version       string
	removeTimeout time.Duration
	callTimeout   time.Duration
	initGrace     time.Duration
	owner         sandbox.Owner
	ids           sandbox.Identity
	now           func() time.Time
	ociRuntime    string
	engine        engineCache
	usrVolumes    bool
	usr           usrCache
	hosts         *hostsFile // mounted at /etc/hosts in every sandbox
	// retry removes what runs left while the engine was unreachable, on
	// bg.
	retry *retrier
	bg    sandbox.Background
	views *viewDir // copy-on-write workspaces (wsview.go)
	// eng runs every Spec: checks, slots, warm pool, job, teardown.
	eng *engine.Engine
}

var _ sandbox.Runner = (*Runner)(nil)

// New returns a Docker runner. It does not contact the daemon; call
// Ping or CheckImage for an early, clear failure.
func New(opts ...Option) (*Runner, error) {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("configure docker runner: %w", err)
	}
	d := &Runner{
		client:        s.client,
		log:           s.Logger,
		retry:         newRetrier(),
		image:         s.DefaultImage(),
		version:       s.Version,
		removeTimeout: s.removeTimeout,
		callTimeout:   s.CallTimeout,
		initGrace:     s.InitGrace,
		ociRuntime:    s.ociRuntime,
		usrVolumes:    s.usrVolumes,
		owner:         sandbox.OwnerOf(s.ownerPID, s.OwnerHost),
		ids:           sandbox.CurrentIdentity(),
		now:           time.Now,
		hosts:         newHostsFile(),
		views:         newViewDir(s.viewDir, s.Logger),
	}
	if s.viewDir != "" && os.Geteuid() == 0 {
		// Views of runners killed before their Close: their mounts go.
		if err := reapViewDirs(s.viewDir); err != nil {
			d.log.Warn("remove the workspace views of dead runners", "dir", s.viewDir, "error", err)
		}
	}
	d.eng = engine.New(driver{d}, engine.Config{Options: s.Options, Identity: d.ids, Prestart: s.prestart,
		Now: func() time.Time { return d.now() }})
	if d.client == nil {
		c, err := newEngineClient()
		if err != nil {
			return nil, err
		}
		d.client, d.ownClient = c, c
	}
	return d, nil
}

// Run executes spec in a container of its own: the engine's run flow
// (engine.Engine.Run) through this backend's driver. A writable workspace
// whose view cannot reach the container is run again with a copy. Besides
// the engine's errors, the Go error may be ErrImageNotFound,
// ErrUnavailable or a Docker API failure.
func (d *Runner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	return d.eng.Run(ctx, spec)
}

// CheckSpec refuses what the engine's host cannot honour (CPUs, memory,
// the engine runtime), as Run does before anything starts.
func (d *Runner) CheckSpec(ctx context.Context, spec sandbox.Spec) error {
	return d.eng.CheckSpec(ctx, spec)
}

// PoolStats returns the warm pool's figures; all zero when it is off.
func (d *Runner) PoolStats() sandbox.PoolStats { return d.eng.PoolStats() }

// Client returns the Docker client the runner uses, e.g. for Reap.
func (d *Runner) Client() Client { return d.client }

// Image returns the default image.
func (d *Runner) Image() string { return d.image }

// WaitIdle returns once the work the runner does in the background (warm
// containers starting, containers being removed) has ended, or when ctx
// ends. Runs may go on meanwhile; work they start is waited for too.
func (d *Runner) WaitIdle(ctx context.Context) error {
	return errors.Join(d.eng.WaitIdle(ctx), d.bg.Wait(ctx))
}

// Close removes the warm pool's idle containers, waits for the background
// work to end, and releases the Docker client if New created it. Runs
// must have returned. A process that exits without Close may leave
// containers behind for Reap.
func (d *Runner) Close() error {
	// Every step of the background work has its own timeout. The
	// engine's teardowns may hand work to the retrier, which stops after.
	_ = d.eng.Close(context.Background())
	d.retry.close()
	_ = d.bg.Wait(context.Background())
	d.views.close()
	if d.ownClient == nil {
		return nil
	}
	if err := d.ownClient.Close(); err != nil {
		return fmt.Errorf("close docker client: %w", err)
	}
	return nil
}
