package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stringid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/cgroup"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// box is one sandbox of the Docker backend: a container, its attached
// stream and a writable workspace's volume or view.
type box struct {
	d       *Runner
	id      string // empty when create failed
	ref     string // what to remove: the id, or the name when no id came back
	runID   string
	vol     *workspaceVolume // nil without a writable workspace
	imageID string           // the image the container runs, by id; empty until known
	s       *attachment      // nil unless started
	// killed: Kill was called; the forced removal needs no wait for
	// the exit.
	killed bool
	// cgroup reads the container's use when this host has its cgroup;
	// usageFound: it was looked for (usage.go).
	cgroup     *cgroup.Reader
	usageFound bool
}

// What the box offers the engine beyond engine.Box.
var (
	_ engine.ReportChecker = (*box)(nil)
	_ engine.Settler       = (*box)(nil)
)

func (b *box) RunID() string { return b.runID }

func (b *box) Alive() bool { return b.s != nil && b.s.alive() }

// Bind puts the run's workspace in the container: the view is mounted on
// its slot, or the files are copied into its volume. A view that cannot
// be mounted turns views off, and the run is tried again with a copy.
func (b *box) Bind(ctx context.Context, run *engine.Run) error {
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("container.id", b.id))
	if b.vol == nil {
		return nil
	}
	p, _ := run.Plan.Data.(*plan)
	if p == nil {
		return fmt.Errorf("bind a docker sandbox: a plan of another driver (%T)", run.Plan.Data)
	}
	if err := b.d.copyIn(ctx, b.id, run.Spec, b.vol, p.ws); err != nil {
		if errors.Is(err, errNoView) {
			return fmt.Errorf("%w: %w", engine.ErrRetry, err)
		}
		return err
	}
	run.Job.HoldView = b.vol.view != nil
	run.WorkspaceBase = b.vol.files
	return nil
}

func (b *box) Input() io.WriteCloser     { return b.s }
func (b *box) Frames() io.Reader         { return b.s.frames }
func (b *box) InitLog() *sandbox.InitLog { return b.s.initErr }

// ImageID asks the engine, when the usr volume did not say, which image
// the container runs. A failure leaves the Result's image_id empty and is
// logged: the script's outcome does not depend on it.
func (b *box) ImageID(ctx context.Context) string {
	if b.imageID != "" {
		return b.imageID
	}
	d := b.d
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.callTimeout)
	defer cancel()
	info, err := d.client.ContainerInspect(cctx, b.id)
	if err != nil || info.ContainerJSONBase == nil {
		d.log.Warn("inspect sandbox container for its image", "container_id", stringid.TruncateID(b.id), "error", err)
		return ""
	}
	b.imageID = info.Image
	return b.imageID
}

// HandBack reads the workspace back (a copy) or the view's upper layer and
// gives what changed to the run's Spec.Changes.
func (b *box) HandBack(ctx context.Context, run *engine.Run) ([]sandbox.FileChange, error) {
	err := b.d.copyOut(ctx, b.id, run.Spec, b.vol)
	return b.vol.changes, err
}

// CheckReport turns init's refusal of a view that did not reach the
// container (the script never started) into engine.ErrRetry, with views
// off: the run goes again with its workspace copied.
func (b *box) CheckReport(run *engine.Run, rep *frame.Report) error {
	if !run.Job.HoldView || !strings.Contains(rep.Error, frame.ViewMissing) {
		return nil
	}
	b.d.views.disable("reach the container", errors.New(rep.Error))
	return fmt.Errorf("%w: %w: %s", engine.ErrRetry, errNoView, rep.Error)
}

// Kill stops the container now, if it was started.
func (b *box) Kill(ctx context.Context) error {
	if b.s == nil {
		return nil
	}
	b.killed = true
	return b.d.kill(ctx, b.id)
}

// End closes the stream and waits for the container to stop (its init
// ends after its report, or was killed), killing it when it does not
// within the call timeout; then its final state says how it ended.
func (b *box) End(ctx context.Context) (engine.Ending, error) {
	end := engine.Ending{InitExit: -1, ImageID: b.imageID}
	if b.s == nil {
		return end, nil
	}
	b.s.close()
	info, err := b.d.inspectStopped(ctx, b.id)
	if err != nil {
		return end, err
	}
	if info.Image != "" {
		end.ImageID = info.Image
	}
	end.OOMKilled, end.InitExit = info.State.OOMKilled, info.State.ExitCode
	return end, nil
}

// Remove deletes the container and then the workspace volume. What the
// engine could not be reached for is tried again when it answers
// (retrier).
func (b *box) Remove(ctx context.Context) error {
	err := b.remove(ctx)
	if errors.Is(err, ErrUnavailable) {
		b.d.retry.add(b.d, b)
	}
	return err
}

// remove is one attempt at it, in a span of its own: in the background it
// outlives the run's.
func (b *box) remove(ctx context.Context) (err error) {
	ctx, sp := telemetry.Start(ctx, "container.remove")
	defer func() { endSpan(sp, err) }()
	var errs []error
	if b.ref != "" {
		errs = append(errs, b.d.remove(ctx, b.ref))
	}
	if err := b.d.removeWorkspaceVolume(ctx, b.vol); err != nil {
		errs = append(errs, fmt.Errorf("remove workspace volume %s: %w", b.vol.name, err))
	}
	return errors.Join(errs...)
}

// inspectStopped returns the container's final state. The attach stream
// ends a moment before the engine records the exit, so a still-running
// container is waited for, and killed when it does not stop in time.
func (d *Runner) inspectStopped(ctx context.Context, id string) (container.InspectResponse, error) {
	ctx = context.WithoutCancel(ctx)
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
		info, err := d.client.ContainerInspect(cctx, id)
		cancel()
		if err != nil {
			return info, apiError("inspect sandbox container", err)
		}
		if info.ContainerJSONBase == nil || info.State == nil {
			return info, fmt.Errorf("inspect sandbox container %s: no state in the engine's answer", stringid.TruncateID(id))
		}
		if !info.State.Running || attempt > 0 {
			return info, nil
		}
		if err := d.waitStopped(ctx, id); err != nil {
			d.log.Warn("sandbox container did not stop; killing it", "container_id", stringid.TruncateID(id), "error", err)
			if kerr := d.kill(ctx, id); kerr != nil {
				return info, errors.Join(err, kerr)
			}
		}
	}
}

func (d *Runner) waitStopped(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	waitC, errC := d.client.ContainerWait(cctx, id, container.WaitConditionNotRunning)
	select {
	case <-waitC:
		return nil
	case err := <-errC:
		return apiError("wait for sandbox container to stop", err)
	}
}

// kill stops the container now. It runs when ctx may already be done.
func (d *Runner) kill(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.callTimeout)
	defer cancel()
	err := d.client.ContainerKill(cctx, id, "KILL")
	if err == nil || ignorableRemoveError(err) {
		return nil // gone, or no longer running
	}
	return apiError("kill sandbox container", err)
}

// remove deletes the container and its anonymous volumes, whatever state
// it is in, tolerating one that is already gone or being removed. A
// container that exits on its own while the engine kills it for the
// removal (sandbox-init exits right after its report) makes the engine
// fail with "is not running"; stopped by then, it goes at the second try.
func (d *Runner) remove(ctx context.Context, ref string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.removeTimeout)
	defer cancel()
	var err error
	for range 2 {
		err = d.client.ContainerRemove(cctx, ref, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || ignorableRemoveError(err) {
			return nil
		}
		if cctx.Err() != nil {
			break
		}
	}
	return apiError("remove sandbox container "+stringid.TruncateID(ref), err)
}

// Settle closes the stream and waits, at most initGrace, for a container
// whose init has reported (or that was killed) to stop. Removing it while
// the engine still counts it as running makes the engine kill it first:
// one more runtime call (an OCI runtime process) per run, and an "is not
// running" failure when the exit wins the race. A failed or timed-out wait
// is only logged: the forced removal follows either way.
func (b *box) Settle(ctx context.Context) error {
	if b.s == nil {
		return nil
	}
	b.s.close()
	if b.killed {
		return nil
	}
	d := b.d
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.initGrace)
	defer cancel()
	waitC, errC := d.client.ContainerWait(ctx, b.id, container.WaitConditionNotRunning)
	select {
	case <-waitC:
	case err := <-errC:
		d.log.Debug("wait for the sandbox container to stop before removing it", "container_id", stringid.TruncateID(b.id), "error", err)
	}
	return nil
}
