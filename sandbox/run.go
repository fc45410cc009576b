package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/sandboxrun/sandboxrun/policy"
)

// Run executes spec in a container of its own (new, or started ahead by the
// warm pool) and removes the container before it returns, also when ctx is
// cancelled (removal then runs under context.WithoutCancel with its own
// timeout). At most WithMaxConcurrent runs execute at once; the others wait
// for a slot or for ctx.
//
// A script that fails is not an error: it is a Result with Success false.
// A nil Result comes only with a refusal before any Docker call (the error
// matches ErrInvalidSpec, ErrSkillUnreadable or ErrWorkspace) or with ctx
// ending while the execution waited for a slot. Otherwise the Result is
// filled as far as the execution got and its Error says why it failed; the
// Go error, when set, is about the environment: ErrImageNotFound,
// ErrDockerUnavailable, ErrNoReport, a Docker API failure, or ctx's error
// when the caller gave up.
func (d *Docker) Run(ctx context.Context, spec Spec) (res *Result, err error) {
	generatedID, err := d.prepare(&spec)
	if err != nil {
		return nil, err
	}
	if err := d.checkEngine(ctx, &spec); err != nil {
		return nil, err
	}
	log := d.log.With("skill", spec.Skill)

	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a free sandbox slot: %w", ctx.Err())
	}
	defer func() { <-d.sem }()

	res = newResult(&spec)
	defer func() {
		if err != nil && res.Error == "" {
			res.Error = err.Error()
		}
	}()
	return res, d.execute(ctx, &spec, res, generatedID, log)
}

// prepare fills defaults, validates, and checks the host side of the spec.
// It reports whether the run id was generated here.
func (d *Docker) prepare(spec *Spec) (generatedID bool, err error) {
	if spec.RunID == "" {
		id, err := newRunID()
		if err != nil {
			return false, err
		}
		spec.RunID, generatedID = id, true
	}
	if spec.Image == "" {
		spec.Image = d.image
	}
	if spec.Limits.WorkspaceWriteBytes == 0 {
		spec.Limits.WorkspaceWriteBytes = policy.DefaultWorkspaceWriteBytes
	}
	if err := spec.Validate(); err != nil {
		return false, err
	}
	spec.SkillDir = filepath.Clean(spec.SkillDir)
	if spec.Workspace != "" {
		spec.Workspace = filepath.Clean(spec.Workspace)
	}
	return generatedID, checkHostPaths(spec, d.ids)
}

// execute is one container's life: create, attach, start (or take a warm
// container that already is), send the job, read frames, inspect, remove.
// Removal is deferred as soon as the container may exist.
func (d *Docker) execute(ctx context.Context, spec *Spec, res *Result, generatedID bool, log *slog.Logger) (err error) {
	began := time.Now()
	key := d.pool.key(spec)
	held := spec.Workspace != "" && spec.WorkspaceWritable
	var vol *workspaceVolume
	var b *box
	if held {
		if vol, err = d.createWorkspaceVolume(ctx, spec); err != nil {
			return err
		}
		// Runs after the container's removal (deferred below, so earlier).
		defer func() {
			if rerr := d.removeWorkspaceVolume(ctx, vol); rerr != nil {
				log.Warn("remove workspace volume", "volume", vol.name, "error", rerr)
				err = errors.Join(err, rerr)
			}
		}()
	} else {
		b = d.pool.take(key)
	}
	if b != nil {
		if generatedID {
			// The container's own id names the run, so labels, env and
			// the Result agree.
			spec.RunID, res.ID = b.runID, b.runID
		}
	} else {
		b, err = d.startContainer(ctx, spec, vol)
	}
	if b != nil {
		defer func() {
			if rerr := d.remove(ctx, b.ref, b.id == ""); rerr != nil {
				log.Warn("remove sandbox container", "container_id", b.ref, "error", rerr)
				err = errors.Join(err, rerr)
			}
		}()
	}
	if err != nil {
		return err
	}
	res.Started = true
	if !held {
		// The next run with this configuration finds a container waiting.
		d.pool.refill(spec, key)
	}
	log = log.With("run_id", spec.RunID, "container_id", shortID(b.id), "warm", b.warm)
	defer b.s.close()

	jf := jobFor(spec, d.version, d.initGrace)
	var handBack func() error
	if held {
		if err := d.copyIn(ctx, b.id, spec, vol); err != nil {
			return err
		}
		jf.HoldDir = workspaceDir
		handBack = func() error { return d.copyOut(ctx, b.id, spec, vol) }
	}
	job, err := json.Marshal(jf)
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	b.s.bind(spec)
	b.s.send(job, held)
	o, err := d.await(ctx, b.id, spec, b.s, log, handBack)
	o.duration = time.Since(began)
	finish(res, b.s.stdout, b.s.stderr, o)
	if held && o.report != nil {
		res.WorkspaceUsedBytes = o.report.HoldUsedBytes
		res.WorkspaceFull = o.report.HoldFreeBytes < pageSize
	}
	log.Debug("sandbox finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"oom_killed", res.OOMKilled, "duration_ms", res.DurationMS)
	return err
}

// box is a container and its attached stream.
type box struct {
	id    string // empty when create failed
	ref   string // what to remove: the id, or the name when no id came back
	runID string
	warm  bool
	s     *session
}

// startContainer creates, attaches to and starts a container for spec; the
// container waits for its job. On error the box, when not nil, still names
// what to remove.
func (d *Docker) startContainer(ctx context.Context, spec *Spec, vol *workspaceVolume) (*box, error) {
	params := d.runParams(spec, d.now())
	if vol != nil {
		params.workspaceVolume = vol.name
	}
	cfg, hc := containerConfig(spec, params)
	name := containerName(spec.RunID)
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	created, err := d.client.ContainerCreate(cctx, cfg, hc, nil, nil, name)
	cancel()
	// A create cut short may still have made the container: it is then
	// removed by name, as its id never arrived.
	b := &box{id: created.ID, ref: created.ID, runID: spec.RunID}
	if b.ref == "" {
		b.ref = name
	}
	if err != nil {
		return b, createError(spec.Image, err)
	}
	b.s, err = d.attachAndStart(ctx, created.ID)
	return b, err
}

func (d *Docker) runParams(spec *Spec, created time.Time) runParams {
	return runParams{image: spec.Image, user: d.ids.user(), created: created, owner: d.owner, version: d.version, ociRuntime: d.ociRuntime}
}

// createError names what a failed create means for the user.
func createError(image string, err error) error {
	switch {
	case cerrdefs.IsNotFound(err):
		return imageNotFound(image, err)
	case cerrdefs.IsInvalidArgument(err):
		return fmt.Errorf("%w: the engine refused the container configuration: %w", ErrInvalidSpec, err)
	}
	return apiError("create sandbox container", err)
}

// await waits for the report and the end of the stream, or kills the
// container when the backstop fires or ctx ends, then inspects it.
//
// handBack, when set, runs once the report has arrived, while sandbox-init
// holds the container up; then stdin is closed and init exits.
func (d *Docker) await(ctx context.Context, id string, spec *Spec, s *session, log *slog.Logger, handBack func() error) (outcome, error) {
	o := outcome{initExit: -1}
	backstop := time.NewTimer(effectiveTimeout(spec.Limits) + d.initGrace + d.backstopMargin)
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
		o.backstop = true
		log.Warn("sandbox-init did not report in time; killing the container")
		killed = d.kill(ctx, id)
	case <-ctx.Done():
		o.cancelled = true
		log.Debug("context ended; killing the container", "cause", context.Cause(ctx))
		killed = d.kill(ctx, id)
	}
	s.close()
	o.report, o.initLog = s.report, s.initErr.firstLine()

	if o.cancelled {
		return o, errors.Join(fmt.Errorf("run cancelled: %w", ctx.Err()), killed)
	}
	info, err := d.inspectStopped(ctx, id)
	if err != nil {
		return o, errors.Join(err, killed)
	}
	st := info.State
	o.imageID = info.Image
	o.oomKilled = st.OOMKilled
	o.initExit = st.ExitCode
	if o.report == nil && !o.backstop && !o.oomKilled {
		log.Warn("sandbox-init ended without a report", "exit_code", st.ExitCode, "init_stderr", s.initErr.String())
		return o, errors.Join(noReport(st.ExitCode, o.initLog, s.decodeErr), killed)
	}
	return o, errors.Join(killed, handed)
}

func noReport(status int, initLog string, decodeErr error) error {
	detail := fmt.Sprintf("sandbox-init exit status %d", status)
	if initLog != "" {
		detail += ": " + initLog
	}
	if decodeErr != nil {
		return fmt.Errorf("%w (%s): %w", ErrNoReport, detail, decodeErr)
	}
	return fmt.Errorf("%w (%s)", ErrNoReport, detail)
}

// inspectStopped returns the container's final state. The attach stream
// ends a moment before the engine records the exit, so a still-running
// container is waited for.
func (d *Docker) inspectStopped(ctx context.Context, id string) (container.InspectResponse, error) {
	ctx = context.WithoutCancel(ctx)
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
		info, err := d.client.ContainerInspect(cctx, id)
		cancel()
		if err != nil {
			return info, apiError("inspect sandbox container", err)
		}
		if info.ContainerJSONBase == nil || info.State == nil {
			return info, fmt.Errorf("inspect sandbox container %s: no state in the engine's answer", shortID(id))
		}
		if !info.State.Running || attempt > 0 {
			return info, nil
		}
		if err := d.waitStopped(ctx, id); err != nil {
			return info, err
		}
	}
}

func (d *Docker) waitStopped(ctx context.Context, id string) error {
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
func (d *Docker) kill(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.callTimeout)
	defer cancel()
	err := d.client.ContainerKill(cctx, id, "KILL")
	if err == nil || ignorableRemoveError(err) {
		return nil // gone, or no longer running
	}
	return apiError("kill sandbox container", err)
}

// remove deletes the container and its anonymous volumes, whatever state
// it is in, tolerating one that is already gone or being removed.
func (d *Docker) remove(ctx context.Context, ref string, byName bool) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.removeTimeout)
	defer cancel()
	err := d.client.ContainerRemove(cctx, ref, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || ignorableRemoveError(err) {
		return nil
	}
	if byName && cerrdefs.IsNotFound(err) {
		return nil
	}
	return apiError("remove sandbox container "+shortID(ref), err)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
