package sandboxrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The operator's operations on the configured backend: reap what crashed
// owners left, build the runner image, prune skill images. They go to the
// backend the policy selects, so a Kubernetes policy reaps pods, not
// Docker containers.

// backend returns the engine, made on first use, without the ping and the
// reap a run's connection does: an operation that needs neither (reap
// itself) must not do them twice.
func (s *Service) backend() (Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.makeEngine()
}

// makeEngine returns s.engine, made by Config.Backend when there is none
// yet. s.mu is held.
func (s *Service) makeEngine() (Engine, error) {
	if s.engine != nil {
		return s.engine, nil
	}
	if s.cfg.Backend == nil {
		return nil, fmt.Errorf("%w: set Config.Runner (docker.New) or Config.Backend (backends.New)", ErrNoBackend)
	}
	eng, err := s.cfg.Backend(s.cfg)
	if err != nil {
		return nil, err
	}
	s.engine = eng
	return eng, nil
}

// Reaped is what Reap found: the backend's leaked sandboxes (and what else
// it keeps for them), and the egress proxies' folders of owners gone.
type Reaped struct {
	Sandboxes     []sandbox.Reaped
	EgressFolders []string
}

// Reap removes the sandboxes whose owner process is gone, from the
// backend the policy selects (with opts.Grace also those older than it,
// whoever owns them), and the egress proxy folders such owners left on
// this host. With opts.DryRun it removes nothing and reports what it would.
// A backend that cannot reap leaves the egress folders still reaped.
func (s *Service) Reap(ctx context.Context, opts sandbox.ReapOptions) (Reaped, error) {
	var out Reaped
	eng, err := s.backend()
	if err != nil {
		return out, err
	}
	if r, ok := eng.(sandbox.Reaper); ok {
		out.Sandboxes, err = r.Reap(ctx, opts)
	}
	dirs, derr := egressrun.ReapFolders("", opts.DryRun)
	out.EgressFolders = dirs
	return out, errors.Join(err, derr)
}

// BuildRunnerImage builds the runner image (RunnerImage()) from the
// embedded Dockerfile unless an up-to-date one exists. o's Tag, Version
// and Dockerfile are the Service's; the rest (sandbox-init, base, progress,
// force) the caller's.
func (s *Service) BuildRunnerImage(ctx context.Context, o images.RunnerOptions) (images.Image, error) {
	o.Tag, o.Version, o.Dockerfile = RunnerImage(), Version, RunnerDockerfile
	return s.cfg.Images.BuildRunner(ctx, o)
}

// BuildProfileImage builds a runner profile (the runner plus the profile's
// Debian packages) on RunnerImage().
func (s *Service) BuildProfileImage(ctx context.Context, o images.ProfileOptions) (images.Image, error) {
	o.Runner, o.Version = RunnerImage(), Version
	return s.cfg.Images.BuildProfile(ctx, o)
}

// PrepareImage makes what the backend keeps beside a freshly built image
// (sandbox/docker's usr volume), so its first run does not wait for it, and
// names it; "" when the backend keeps nothing.
func (s *Service) PrepareImage(ctx context.Context, ref string) (string, error) {
	eng, err := s.backend()
	if err != nil {
		return "", err
	}
	if p, ok := eng.(sandbox.ImagePreparer); ok {
		return p.PrepareImage(ctx, ref)
	}
	return "", nil
}

// PruneImages removes the skill images no skill under the Service's roots
// runs in now (see pruneSkillImages), then what the backend kept for
// images that are gone. warnings name the skills whose images were kept.
func (s *Service) PruneImages(ctx context.Context, dryRun bool) (pruned []images.Listed, state []sandbox.Reaped, warnings []error, err error) {
	pruned, warnings, err = s.imageEnv().Prune(ctx, s.cfg.SkillRoots, BuildOptions{Policy: s.pol}, dryRun)
	if err != nil {
		return pruned, nil, warnings, err
	}
	eng, err := s.backend()
	if err != nil {
		return pruned, nil, warnings, err
	}
	if p, ok := eng.(sandbox.ImagePreparer); ok {
		state, err = p.PruneImageState(ctx, dryRun)
	}
	return pruned, state, warnings, err
}
