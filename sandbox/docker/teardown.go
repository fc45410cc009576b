package docker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stringid"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// teardown is what is left of a run once its Result is known: the
// container (and its attach stream) and a writable workspace's volume, in
// that order, as the volume cannot go while the container uses it.
type teardown struct {
	d   *Runner
	box *box             // nil when no container may exist
	vol *workspaceVolume // nil without a writable workspace
	log *slog.Logger
	// exits: sandbox-init has reported and ends on its own, so the
	// container is given a moment to stop before it is removed.
	exits bool
}

// run removes what the run left. It runs detached from ctx's
// cancellation, each step with its own timeout. What could not be removed
// because the engine was unreachable is tried again when it answers
// (retrier).
func (t *teardown) run(ctx context.Context) error {
	err := t.remove(ctx)
	if errors.Is(err, ErrUnavailable) {
		t.exits = false
		t.d.retry.add(t.d, t)
	}
	return err
}

// runID names the run t tears down, for logs.
func (t *teardown) runID() string {
	if t.box != nil {
		return t.box.runID
	}
	return ""
}

// remove is one attempt at the teardown.
func (t *teardown) remove(ctx context.Context) (err error) {
	// In the background this outlives the run's span: its own span, a
	// child that ends later.
	ctx, sp := telemetry.Start(ctx, "container.remove")
	defer func() { endSpan(sp, err) }()
	var errs []error
	if b := t.box; b != nil {
		if b.s != nil {
			b.s.close()
			b.s = nil
		}
		if t.exits {
			t.d.awaitExit(ctx, b.id)
		}
		if err := t.d.remove(ctx, b.ref); err != nil {
			t.log.Warn("remove sandbox container", "container_id", b.ref, "error", err)
			errs = append(errs, err)
		}
	}
	if err := t.d.removeWorkspaceVolume(ctx, t.vol); err != nil {
		t.log.Warn("remove workspace volume", "volume", t.vol.name, "error", err)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// later tears down a run whose Result is complete without holding up the
// caller: in the background while fewer than cap(d.teardowns) teardowns
// are there, else at once, so the engine never has more than that many
// finished sandboxes waiting for removal. Failures are logged; a container
// left behind carries its owner's labels for Reap, and Close waits for the
// background before the process exits.
func (d *Runner) later(ctx context.Context, t *teardown) {
	ctx = context.WithoutCancel(ctx)
	select {
	case d.teardowns <- struct{}{}:
		d.bg.Go(func() {
			defer func() { <-d.teardowns }()
			_ = t.run(ctx) // logged
		})
	default:
		_ = t.run(ctx) // logged
	}
}

// awaitExit waits, at most initGrace, for a container whose init has
// reported to stop on its own. Removing it while the engine still counts
// it as running makes the engine kill it first: one more runtime call (an
// OCI runtime process) per run, and an "is not running" failure when the
// exit wins the race. A failed or timed-out wait is only logged: the
// forced removal follows either way.
func (d *Runner) awaitExit(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.initGrace)
	defer cancel()
	waitC, errC := d.client.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case <-waitC:
	case err := <-errC:
		d.log.Debug("wait for the sandbox container to stop before removing it", "container_id", stringid.TruncateID(id), "error", err)
	}
}
