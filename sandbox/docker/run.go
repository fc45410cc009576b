package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stringid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Run executes spec in a container of its own (new, or started ahead by the
// warm pool) and returns as soon as sandbox-init has reported the script's
// end: removing the container then goes on in the background, under
// context.WithoutCancel with its own timeout (WaitIdle and Close wait for
// it). A run that ends without a report (cancelled, killed, engine failure)
// removes its container before it returns. At most WithMaxConcurrent runs
// execute at once; the others wait for a slot or for ctx.
//
// A script that fails is not an error: it is a Result with Success false.
// A nil Result comes only with a refusal before any Docker call (the error
// matches ErrInvalidSpec, ErrSkillUnreadable or ErrWorkspace) or with ctx
// ending while the execution waited for a slot. Otherwise the Result is
// filled as far as the execution got and its Error says why it failed; the
// Go error, when set, is about the environment: ErrImageNotFound,
// ErrUnavailable, ErrNoReport, a Docker API failure, or ctx's error
// when the caller gave up.
func (d *Runner) Run(ctx context.Context, spec sandbox.Spec) (res *sandbox.Result, err error) {
	generatedID, err := sandbox.PrepareSpec(&spec, d.image, d.ids)
	if err != nil {
		return nil, err
	}
	if err := d.CheckSpec(ctx, spec); err != nil {
		return nil, err
	}
	log := d.log.With("skill", spec.Skill)
	ctx, sp := telemetry.Start(ctx, "sandbox.run", attribute.String("container.runtime", "docker"),
		attribute.String("sandboxrun.run_id", spec.RunID), attribute.String("container.image.name", spec.Image))
	defer func() { endSpan(sp, err) }()

	_, queued := telemetry.Start(ctx, "sandbox.queue")
	res, end, err := sandbox.Begin(ctx, d.sem, &spec)
	endSpan(queued, err)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	first, began := spec, *res
	err = d.execute(ctx, &spec, res, generatedID, log)
	if errors.Is(err, errNoView) {
		// Nothing ran: the same run again, its workspace copied.
		log.Warn("copy-on-write workspace unavailable; copying it", "error", err)
		spec, *res = first, began
		err = d.execute(ctx, &spec, res, generatedID, log)
	}
	return res, err
}

// execute is one container's life: create, attach, start (or take a warm
// container that already is), send the job, read frames until the report.
// The teardown is set up as soon as a container may exist; it runs in the
// background when the report came, before returning otherwise.
func (d *Runner) execute(ctx context.Context, spec *sandbox.Spec, res *sandbox.Result, generatedID bool, log *slog.Logger) (err error) {
	began := time.Now()
	usr := d.usrFor(ctx, spec.Image)
	held := holdsWorkspace(spec)
	t := &teardown{d: d, log: log}
	answered := false
	defer func() {
		if answered {
			t.exits = true
			d.later(ctx, t)
			return
		}
		err = errors.Join(err, t.run(ctx))
	}()
	var ws wsPlan
	if held {
		if spec.Changes == nil {
			return fmt.Errorf("%w: a writable workspace needs Spec.Changes, the applier of the run's changes", sandbox.ErrInvalidSpec)
		}
		if ws, err = d.planWorkspace(spec); err != nil {
			return err
		}
	}
	key := d.pool.key(spec, usr, ws.view)
	if held && !ws.view && ws.size != spec.Limits.WorkspaceWriteBytes {
		key = "" // a warm container's volume has the cap's size
	}
	t.box = d.pool.take(ctx, key)
	d.pool.counts(key, t.box != nil)
	sp := trace.SpanFromContext(ctx)
	sp.SetAttributes(attribute.Bool("sandboxrun.warm", t.box != nil))
	if held && t.box != nil {
		// A warm container for a writable workspace came with its own
		// empty volume; it goes when the container does.
		t.vol = t.box.vol
	} else if held {
		if t.vol, err = d.newWorkspaceVolume(ctx, spec.RunID, ws); err != nil {
			return err
		}
	}
	b := t.box
	if b != nil {
		if generatedID {
			// The container's own id names the run, so labels, env and
			// the Result agree.
			spec.RunID, res.ID = b.runID, b.runID
		}
	} else {
		b, err = d.startContainer(ctx, spec, t.vol, usr)
		t.box = b
		if err != nil && usr.volume != "" {
			d.forgetUsr(usr.imageID)
		}
	}
	if err != nil {
		return err
	}
	res.Started = true
	// The next run with this configuration finds a container waiting. It
	// starts once this run has its Result, so that it does not compete
	// with the script for the CPUs.
	defer d.pool.refill(spec, key, usr, ws.view)
	log = log.With("run_id", spec.RunID, "container_id", stringid.TruncateID(b.id), "warm", b.warm)

	jf := sandbox.JobFor(spec, d.version, d.initGrace)
	var handBack func() error
	if held {
		if err := d.copyIn(ctx, b.id, spec, t.vol, ws); err != nil {
			return err
		}
		jf.HoldDir, jf.HoldView = sandbox.WorkspaceDir, t.vol.view != nil
		handBack = func() error { return d.copyOut(ctx, b.id, spec, t.vol) }
	}
	job, err := json.Marshal(jf)
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	b.s.bind(spec)
	sp.SetAttributes(attribute.String("container.id", b.id))
	sp.AddEvent("job sent")
	b.s.send(job, held)
	if b.imageID == "" {
		// While the script runs: the Result names the image by id.
		b.imageID = d.imageOf(ctx, b.id, log)
	}
	o, err := d.await(ctx, b, spec, log, handBack)
	answered = o.Report != nil
	if held && answered && strings.Contains(o.Report.Error, frame.ViewMissing) {
		// The script never started: run it again with a copy, once this
		// container (which has the run's name) is gone.
		answered = false
		d.views.disable("reach the container", errors.New(o.Report.Error))
		return fmt.Errorf("%w: %s", errNoView, o.Report.Error)
	}
	o.Duration = time.Since(began)
	b.s.out.Finish(res, o)
	telemetry.EventAt(sp, "first output byte", b.s.out.FirstOutputAt())
	telemetry.EventAt(sp, "result frame", b.s.out.ReportAt())
	if held && o.Report != nil {
		res.WorkspaceUsedBytes = o.Report.HoldUsedBytes + t.vol.files
		res.WorkspaceFull = o.Report.HoldFreeBytes < sandbox.PageSize
		res.Files = t.vol.changes
	}
	log.Debug("sandbox finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"oom_killed", res.OOMKilled, "duration_ms", res.DurationMS,
		"prestarted", o.Report != nil && o.Report.Prestarted)
	return err
}

// box is a container and its attached stream.
type box struct {
	id      string // empty when create failed
	ref     string // what to remove: the id, or the name when no id came back
	runID   string
	vol     *workspaceVolume // a warm container's own workspace volume, or nil
	warm    bool
	imageID string // the image the container runs, by id; empty until known
	s       *attachment
}

// startContainer creates, attaches to and starts a container for spec; the
// container waits for its job. On error the box, when not nil, still names
// what to remove.
func (d *Runner) startContainer(ctx context.Context, spec *sandbox.Spec, vol *workspaceVolume, usr usrMount) (*box, error) {
	params := d.runParams(spec, d.now(), usr)
	if vol != nil {
		params.workspaceVolume, params.workspaceSlot = vol.name, vol.slot
	}
	hosts, err := d.hosts.ensure()
	if err != nil {
		return nil, err
	}
	params.hostsFile = hosts
	cfg, hc := containerConfig(spec, params)
	name := containerName(spec.RunID)
	// The create is not cancelled with the run: an engine may finish a
	// create whose caller went away, after the removal by name found
	// nothing, and the container would outlive the run. A create is short;
	// the run's cancellation is looked at once it returns.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.callTimeout)
	sctx, sp := telemetry.Start(cctx, "container.create")
	created, err := d.client.ContainerCreate(sctx, cfg, hc, nil, nil, name)
	endSpan(sp, err)
	cancel()
	// A create cut short (its timeout) may still have made the container:
	// it is then removed by name, as its id never arrived.
	b := &box{id: created.ID, ref: created.ID, runID: spec.RunID, imageID: usr.imageID}
	if b.ref == "" {
		b.ref = name
	}
	if err != nil {
		return b, createError(spec.Image, err)
	}
	if err := ctx.Err(); err != nil {
		return b, fmt.Errorf("run cancelled: %w", err)
	}
	b.s, err = d.attachAndStart(ctx, created.ID)
	return b, err
}

func (d *Runner) runParams(spec *sandbox.Spec, created time.Time, usr usrMount) runParams {
	return runParams{image: spec.Image, user: d.ids.User(), created: created, owner: d.owner, version: d.version, ociRuntime: d.ociRuntime, usr: usr}
}

// createError names what a failed create means for the user.
func createError(image string, err error) error {
	switch {
	case cerrdefs.IsNotFound(err):
		return imageNotFound(image, err)
	case cerrdefs.IsInvalidArgument(err):
		return fmt.Errorf("%w: the engine refused the container configuration: %w", sandbox.ErrInvalidSpec, err)
	}
	return apiError("create sandbox container", err)
}

// imageOf asks the engine which image, by id, a started container runs.
// A failure leaves the Result's image_id empty and is logged: the script's
// outcome does not depend on it.
func (d *Runner) imageOf(ctx context.Context, id string, log *slog.Logger) string {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.callTimeout)
	defer cancel()
	info, err := d.client.ContainerInspect(cctx, id)
	if err != nil || info.ContainerJSONBase == nil {
		log.Warn("inspect sandbox container for its image", "container_id", stringid.TruncateID(id), "error", err)
		return ""
	}
	return info.Image
}

// await waits for the report, or kills the container when the backstop
// fires or ctx ends. A report that carries the OOM count completes the
// Result at once; otherwise (no report, or an init too old to count) the
// container's final state is read from the engine.
//
// handBack, when set, runs once the report has arrived, while sandbox-init
// holds the container up; then stdin is closed and init exits.
func (d *Runner) await(ctx context.Context, b *box, spec *sandbox.Spec, log *slog.Logger, handBack func() error) (sandbox.Outcome, error) {
	s, id := b.s, b.id
	o := sandbox.Outcome{InitExit: -1, ImageID: b.imageID}
	backstop := time.NewTimer(sandbox.EffectiveTimeout(spec.Limits) + d.initGrace + d.backstopMargin)
	defer backstop.Stop()

	var killed, handed error
	select {
	case <-s.heard:
		switch {
		case s.reported && handBack != nil:
			handed = handBack()
			s.release()
		case !s.reported:
			<-s.decoded
			if s.decodeErr != nil {
				// A broken stream: init may still be running, unheard.
				killed = d.kill(ctx, id)
			}
		}
	case <-backstop.C:
		o.Backstop = true
		log.Warn("sandbox-init did not report in time; killing the container")
		killed = d.kill(ctx, id)
	case <-ctx.Done():
		o.Cancelled = true
		log.Debug("context ended; killing the container", "cause", context.Cause(ctx))
		killed = d.kill(ctx, id)
	}
	// Every frame of the script's output precedes the report, so nothing
	// is lost by ending the stream here, before the container has exited.
	s.close()
	o.Report, o.InitLog = s.report, s.initErr.FirstLine()

	if o.Cancelled {
		return o, errors.Join(fmt.Errorf("run cancelled: %w", ctx.Err()), killed)
	}
	if o.Report != nil && o.Report.OOMKills != nil {
		return o, errors.Join(killed, handed)
	}
	info, err := d.inspectStopped(ctx, id)
	if err != nil {
		return o, errors.Join(err, killed, handed)
	}
	st := info.State
	if info.Image != "" {
		o.ImageID = info.Image
	}
	o.OOMKilled = st.OOMKilled
	o.InitExit = st.ExitCode
	if o.Report == nil && !o.Backstop && !o.OOMKilled {
		log.Warn("sandbox-init ended without a report", "exit_code", st.ExitCode, "init_stderr", s.initErr.String())
		return o, errors.Join(sandbox.NoReportError(st.ExitCode, o.InitLog, s.decodeErr), killed)
	}
	return o, errors.Join(killed, handed)
}

// inspectStopped returns the container's final state. The attach stream
// ends a moment before the engine records the exit, so a still-running
// container is waited for.
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
			return info, err
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
