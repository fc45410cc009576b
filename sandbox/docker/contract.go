package docker

import (
	"context"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// ErrUnavailable means the Docker daemon could not be reached. It matches
// sandbox.ErrUnavailable.
var ErrUnavailable = sandbox.Unavailable("docker daemon unreachable")

// What the Runner offers beyond sandbox.Runner, checked here so that a
// renamed method fails the build rather than silently dropping an ability.
var (
	_ sandbox.Pinger        = (*Runner)(nil)
	_ sandbox.ImageChecker  = (*Runner)(nil)
	_ sandbox.Reaper        = (*Runner)(nil)
	_ sandbox.PoolReporter  = (*Runner)(nil)
	_ sandbox.ImagePreparer = (*Runner)(nil)
	_ sandbox.SpecChecker   = (*Runner)(nil)
)

// PrepareImage fills ref's usr volume (see PrepareUsr).
func (d *Runner) PrepareImage(ctx context.Context, ref string) (string, error) {
	return d.PrepareUsr(ctx, ref)
}

// PruneImageState removes the usr volumes of images the engine no longer
// has (see PruneUsr).
func (d *Runner) PruneImageState(ctx context.Context, dryRun bool) ([]sandbox.Reaped, error) {
	return d.PruneUsr(ctx, dryRun)
}
