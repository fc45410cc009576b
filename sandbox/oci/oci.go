package oci

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// Runner runs each execution in a container of its own, made by the OCI
// runtime from a bundle under the state folder. It is safe for concurrent
// use.
type Runner struct {
	log            *slog.Logger
	runtime        string // the runtime's executable
	runtimeName    string // runc, crun or runsc
	state          string
	runRoot        string // the runtime's own state (--root)
	bundles        string
	hostsFile      string
	images         *images
	image          string
	version        string
	initGrace      time.Duration
	backstopMargin time.Duration
	callTimeout    time.Duration
	owner          sandbox.Owner
	ids            sandbox.Identity
	seccomp        *specs.LinuxSeccomp
	now            func() time.Time
	// eng runs every Spec: checks, slots, warm pool, job, teardown.
	eng *engine.Engine
}

// The Runner's abilities beyond sandbox.Runner.
var (
	_ sandbox.Runner       = (*Runner)(nil)
	_ sandbox.Pinger       = (*Runner)(nil)
	_ sandbox.ImageChecker = (*Runner)(nil)
	_ sandbox.Reaper       = (*Runner)(nil)
	_ sandbox.PoolReporter = (*Runner)(nil)
	_ sandbox.SpecChecker  = (*Runner)(nil)
)

// ErrNotRoot is the error of New run by a user other than root.
var ErrNotRoot = errors.New("the oci backend needs root: it creates namespaces, cgroups and mounts; run sandboxrun as root, or use the docker backend")

// New returns a Runner. It needs root, the runtime on PATH (or at the
// absolute path given) and a state folder it can create.
func New(opts ...Option) (*Runner, error) {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("oci backend: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	bin, err := exec.LookPath(s.runtime)
	if err != nil {
		return nil, sandbox.Unavailable(fmt.Sprintf("OCI runtime %s not found (%v): install it (Debian: apt-get install %s) or name its absolute path", s.runtime, err, filepath.Base(s.runtime)))
	}
	sc, err := defaultSeccomp()
	if err != nil {
		return nil, err
	}
	r := &Runner{
		log:            s.Logger,
		runtime:        bin,
		runtimeName:    filepath.Base(s.runtime),
		state:          s.state,
		runRoot:        filepath.Join(s.state, "runtime"),
		bundles:        filepath.Join(s.state, "bundles"),
		hostsFile:      filepath.Join(s.state, "hosts"),
		images:         newImages(s.state),
		image:          s.DefaultImage(),
		version:        s.Version,
		initGrace:      s.InitGrace,
		backstopMargin: s.BackstopMargin,
		callTimeout:    s.CallTimeout,
		owner:          sandbox.OwnerOf(os.Getpid(), s.OwnerHost),
		ids:            sandbox.CurrentIdentity(),
		seccomp:        sc,
		now:            s.now,
	}
	r.eng = engine.New(driver{r}, engine.Config{Options: s.Options, Identity: r.ids, Prestart: true})
	for _, d := range []string{r.state, r.runRoot, r.bundles} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("oci backend state folder: %w", err)
		}
	}
	// Runs bind this file at /etc/hosts: fixed content, never the host's.
	if err := writeAtomically(r.hostsFile, []byte(sandbox.Hosts)); err != nil {
		return nil, fmt.Errorf("oci backend hosts file: %w", err)
	}
	return r, nil
}

// Ping checks that the runtime answers.
func (r *Runner) Ping(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
	defer cancel()
	if out, err := exec.CommandContext(cctx, r.runtime, "--version").CombinedOutput(); err != nil {
		return sandbox.Unavailable(fmt.Sprintf("OCI runtime %s: %v: %s", r.runtime, err, firstLine(out)))
	}
	return nil
}

// CheckImage returns the id of ref when it is unpacked; a missing image
// matches sandbox.ErrImageNotFound.
func (r *Runner) CheckImage(_ context.Context, ref string) (string, error) {
	_, id, err := r.images.rootfs(ref)
	return id, err
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// Run executes spec in a container of its own: the engine's run flow
// (engine.Engine.Run) through this backend's driver.
func (r *Runner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	return r.eng.Run(ctx, spec)
}

// CheckSpec refuses what this host cannot honour (CPUs, memory), as Run
// does before anything starts.
func (r *Runner) CheckSpec(ctx context.Context, spec sandbox.Spec) error {
	return r.eng.CheckSpec(ctx, spec)
}

// PoolStats reports on the warm pool.
func (r *Runner) PoolStats() sandbox.PoolStats { return r.eng.PoolStats() }

// WaitIdle waits until the teardown of every finished run and the warm
// pool's starts are done, or ctx ends.
func (r *Runner) WaitIdle(ctx context.Context) error { return r.eng.WaitIdle(ctx) }

// Close removes the warm pool's containers and waits for the teardown of
// finished runs.
func (r *Runner) Close() error { return r.eng.Close(context.Background()) }

// Image is the default image.
func (r *Runner) Image() string { return r.image }

// RuntimeName is the OCI runtime the sandboxes run under: runc, crun or
// runsc.
func (r *Runner) RuntimeName() string { return r.runtimeName }

// StateDir is the backend's state folder.
func (r *Runner) StateDir() string { return r.state }
