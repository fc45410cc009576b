package oci

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Option configures a Runner.
type Option func(*settings)

// settings hold every tunable; defaultSettings is the one place where
// defaults live.
type settings struct {
	sandbox.Options // what every backend shares, with its defaults
	runtime         string
	state           string
	now             func() time.Time
}

// Runtimes are the OCI runtimes the backend drives; each takes runc's
// command line.
var Runtimes = []string{"runc", "crun", "runsc"}

// DefaultState is the backend's state folder when WithState is not given.
const DefaultState = "/var/lib/sandboxrun/oci"

func defaultSettings() settings {
	host, _ := os.Hostname() // an empty host only weakens reaping
	return settings{
		Options: sandbox.DefaultOptions(host),
		runtime: "runc",
		state:   DefaultState,
		now:     time.Now,
	}
}

// WithRuntime names the OCI runtime: runc, crun or runsc (gVisor), found
// on PATH, or an absolute path to one of them. Default: runc.
func WithRuntime(name string) Option { return func(s *settings) { s.runtime = name } }

// WithState sets the backend's state folder: unpacked images, bundles of
// running sandboxes and the runtime's own state. It must be an absolute
// path on a local file system. Default: DefaultState.
func WithState(dir string) Option { return func(s *settings) { s.state = dir } }

// WithDefaultImage sets the image used when Spec.Image is empty; it must
// have been imported (Runner.Import). Default: sandboxrun/runner:<version>.
func WithDefaultImage(ref string) Option { return func(s *settings) { s.Image = ref } }

// WithVersion sets sandboxrun's version, visible to scripts as
// SANDBOXRUN_VERSION and recorded in an annotation.
func WithVersion(v string) Option { return func(s *settings) { s.Version = v } }

// WithLogger sets the structured logger. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.Logger = l } }

// WithMaxConcurrent bounds the sandboxes of this runner alive at once;
// other runs wait for a slot or for their context. Default: 2 × NumCPU.
func WithMaxConcurrent(n int) Option { return func(s *settings) { s.MaxConcurrent = n } }

// WithInitGrace sets how long sandbox-init waits between SIGTERM and
// SIGKILL when a script times out. Default: 2s.
func WithInitGrace(d time.Duration) Option { return func(s *settings) { s.InitGrace = d } }

// WithBackstopMargin sets how long past timeout + grace the runner waits
// for sandbox-init's report before it kills the sandbox. Default: 5s.
func WithBackstopMargin(d time.Duration) Option { return func(s *settings) { s.BackstopMargin = d } }

// WithCallTimeout bounds every call of the runtime that is not a run
// (kill, delete, state). Default: 30s.
func WithCallTimeout(d time.Duration) Option { return func(s *settings) { s.CallTimeout = d } }

// WithWarmPool keeps size containers created and started ahead of their
// runs, with sandbox-init waiting for its job, so that runs with a
// configuration seen before (same skill, workspace, image and limits)
// skip the bundle and the runtime's create and start. After each run the
// pool is topped up for that run's configuration, in the background once
// the run has its Result. Each container serves exactly one run. Runs with
// a writable workspace (its view is mounted on the container's slot) and
// with an egress proxy (the engine's slot is joined to the run's proxy) are
// pooled too. Idle containers are removed after maxIdle, and all by Close.
// Default: off.
func WithWarmPool(size int, maxIdle time.Duration) Option {
	return func(s *settings) { s.WarmSize, s.WarmMaxIdle, s.WarmByDemand = size, maxIdle, false }
}

// WithWarmPoolByDemand keeps warm containers like WithWarmPool, but as
// many for each configuration as its recent demand asks, at most max in
// all (sandbox/warm ByDemand). Default: off.
func WithWarmPoolByDemand(max int, maxIdle time.Duration) Option {
	return func(s *settings) { s.WarmSize, s.WarmMaxIdle, s.WarmByDemand = max, maxIdle, true }
}

func (s *settings) validate() error {
	errs := s.Validate("sandboxes")
	base := filepath.Base(s.runtime)
	if !knownRuntime(base) {
		errs = append(errs, fmt.Errorf("OCI runtime %q: use one of %s", s.runtime, strings.Join(Runtimes, ", ")))
	}
	switch {
	case !filepath.IsAbs(s.state):
		errs = append(errs, fmt.Errorf("state folder %q is not an absolute path", s.state))
	case strings.ContainsAny(s.state, ":,"):
		// Overlay mount options list folders separated by these.
		errs = append(errs, fmt.Errorf("state folder %q contains ':' or ',': choose another folder", s.state))
	}
	if s.now == nil {
		errs = append(errs, errors.New("clock is nil"))
	}
	return errors.Join(errs...)
}

func knownRuntime(name string) bool {
	for _, r := range Runtimes {
		if name == r {
			return true
		}
	}
	return false
}
