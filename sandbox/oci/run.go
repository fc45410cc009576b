package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Run executes spec in a container of its own (new, or started ahead by
// the warm pool) and returns as soon as sandbox-init has reported the
// script's end: the container's end and the removal of the container, its
// cgroup and its bundle then go on in the background (WaitIdle and Close
// wait for them). A run that ends without a report (cancelled, killed,
// failed to start) removes all of it before it returns, under
// context.WithoutCancel with its own timeout.
// The Result follows the same conventions as the other backends'
// (sandbox.Runner).
//
// A nil Result comes only with a refusal before the runtime is called (the
// error matches sandbox.ErrInvalidSpec, ErrSkillUnreadable, ErrWorkspace or
// ErrImageNotFound) or with ctx ending while the run waited for a slot.
func (r *Runner) Run(ctx context.Context, spec sandbox.Spec) (res *sandbox.Result, err error) {
	generatedID, err := sandbox.PrepareSpec(&spec, r.image, r.ids)
	if err != nil {
		return nil, err
	}
	if spec.Limits.Network {
		return nil, fmt.Errorf("%w: the oci backend gives a sandbox no network but loopback: grant an egress allowlist instead, or use the docker backend for a full network", sandbox.ErrInvalidSpec)
	}
	if spec.WorkspaceWritable && spec.Changes == nil {
		return nil, fmt.Errorf("%w: a writable workspace needs Spec.Changes, which applies what the run changed (a sandboxrun.Service sets it)", sandbox.ErrInvalidSpec)
	}
	image, imageID, err := r.images.rootfs(spec.Image)
	if err != nil {
		return nil, err
	}
	res, end, err := sandbox.Begin(ctx, r.sem, &spec)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	return res, r.execute(ctx, &spec, res, image, imageID, generatedID)
}

// execute is one container's life: write its bundle and run the runtime
// with sandbox-init's stdin and stdout as pipes (or take a warm container
// that already waits for its job), send the job, read frames until the
// report and the end of the container, remove what is left.
func (r *Runner) execute(ctx context.Context, spec *sandbox.Spec, res *sandbox.Result, image, imageID string, generatedID bool) (err error) {
	began := time.Now()
	key := r.pool.key(spec)
	w := r.pool.take(ctx, key)
	r.pool.counts(key, w != nil)
	if w != nil && generatedID {
		// The container's own id names the run, so annotations, env and
		// the Result agree.
		spec.RunID, res.ID = w.runID, w.runID
	}
	var b *bundle
	var c *container
	if w != nil {
		b, c = w.b, w.c
	} else {
		b = &bundle{id: containerID(spec.RunID), dir: filepath.Join(r.bundles, containerID(spec.RunID))}
	}
	log := r.log.With("skill", spec.Skill, "run_id", spec.RunID, "container_id", b.id, "warm", w != nil)
	ended := false // the runtime ran the container to its end and removed it
	defer func() {
		if c != nil && c.answered {
			r.bg.Go(func() { r.teardown(ctx, b, c, log) })
			return
		}
		if rerr := r.remove(ctx, b, !ended); rerr != nil {
			log.Warn("remove sandbox", "error", rerr)
			err = errors.Join(err, rerr)
		}
	}()
	if c == nil {
		if c, err = r.create(ctx, b, spec, image); err != nil {
			return err
		}
	}
	res.Started = true
	// The next run like this one finds a container waiting; it starts
	// once this run has its Result, not to compete with the script.
	defer r.pool.refill(spec, key)
	o, err := r.await(ctx, c, spec, b, log)
	ended = o.InitExit == 0 && !o.Backstop && !o.Cancelled
	o.ImageID = imageID
	o.Duration = time.Since(began)
	c.out.Finish(res, o)
	if spec.WorkspaceWritable && o.Report != nil {
		res.WorkspaceUsedBytes = o.Report.HoldUsedBytes
		res.WorkspaceFull = o.Report.HoldFreeBytes < sandbox.PageSize
		res.Files = c.files
	}
	log.Debug("sandbox finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"oom_killed", res.OOMKilled, "duration_ms", res.DurationMS,
		"prestarted", o.Report != nil && o.Report.Prestarted)
	return err
}

// teardown waits for an answered run's container to end and removes it,
// in the background: the caller has its Result already. WaitIdle and
// Close wait for it.
func (r *Runner) teardown(ctx context.Context, b *bundle, c *container, log *slog.Logger) {
	exit, err := r.settle(ctx, c)
	if err != nil {
		log.Warn("end of sandbox", "error", err)
	}
	if err := r.remove(ctx, b, exit != 0); err != nil {
		log.Warn("remove sandbox", "error", err)
	}
}

// WaitIdle waits until the teardown of every finished run is done, or ctx
// ends.
func (r *Runner) WaitIdle(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// create writes spec's bundle in b and starts its container, which waits
// for its job. The caller removes b, also when this fails.
func (r *Runner) create(ctx context.Context, b *bundle, spec *sandbox.Spec, image string) (*container, error) {
	if err := os.Mkdir(b.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create bundle: %w", err)
	}
	params := r.params(spec)
	if spec.WorkspaceWritable {
		var err error
		if params.workspace, err = b.prepareWorkspace(spec); err != nil {
			return nil, err
		}
	}
	if err := b.prepare(bundleConfig(spec, params), image); err != nil {
		return nil, err
	}
	return r.start(b)
}

func (r *Runner) params(spec *sandbox.Spec) bundleParams {
	return bundleParams{
		uid: sandbox.SandboxUID, gid: sandbox.SandboxGID,
		created:   r.now(),
		owner:     r.owner,
		version:   r.version,
		cgroup:    cgroupParent + "/" + spec.RunID,
		hostsFile: r.hostsFile,
		seccomp:   r.seccomp,
	}
}

// cgroupParent holds every run's cgroup, in each hierarchy.
const cgroupParent = "/sandboxrun"

// container is one running `runtime run`: the job goes in on stdin, the
// frames come back on stdout, the runtime's and init's own diagnostics on
// stderr.
type container struct {
	id      string
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	initLog *sandbox.InitLog
	out     *sandbox.Output
	files   []sandbox.FileChange // a writable workspace's changes, as taken
	exited  chan struct{}        // closed when the runtime's process has ended
	decoded chan struct{}        // closed when the frame stream has ended
	// answered: the report came, and the container's end is left to
	// the background.
	answered bool
	waitErr  error // how it ended; read after exited
}

// start runs the runtime on the bundle, in the foreground so that the
// container's stdio are the pipes given to it.
func (r *Runner) start(b *bundle) (*container, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox stdin: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("sandbox stdout: %w", err)
	}
	c := &container{id: b.id, stdin: inW, stdout: outR, initLog: sandbox.NewInitLog(), exited: make(chan struct{}), decoded: make(chan struct{})}
	c.cmd = exec.Command(r.runtime, "--root", r.runRoot, "run", "--bundle", b.dir, b.id) //nolint:gosec // the runtime chosen by the operator
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, c.initLog
	c.cmd.Env = []string{"PATH=" + sandbox.InitPathEnv} // nothing of the host's environment
	err = c.cmd.Start()
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(r.runtime), err)
	}
	go func() {
		// No goroutine of exec copies: the pipes are the host's own
		// files, so Wait only waits.
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// await sends the job and decodes frames until the report (or the end of
// the stream), the backstop or ctx; then it waits for the container to end,
// killing it unless it reported. With a writable workspace, init holds the
// container up after its report until stdin closes, while the changes are
// handed back.
func (r *Runner) await(ctx context.Context, c *container, spec *sandbox.Spec, b *bundle, log *slog.Logger) (sandbox.Outcome, error) {
	o := sandbox.Outcome{InitExit: -1}
	c.out = sandbox.NewOutput(spec)
	jf := sandbox.JobFor(spec, r.version, r.initGrace)
	held := spec.WorkspaceWritable
	if held {
		jf.HoldDir = sandbox.WorkspaceDir
	}
	job, err := json.Marshal(jf)
	if err != nil {
		_ = r.runtimeCall(ctx, "kill", c.id, "KILL")
		return o, errors.Join(fmt.Errorf("encode job: %w", err), c.wait())
	}
	var (
		heardOnce sync.Once
		heard     = make(chan struct{})
		report    *frame.Report
		heardRep  *frame.Report // the report, once heard closed on it
		decodeErr error
	)
	hear := func() { heardOnce.Do(func() { close(heard) }) }
	go func() {
		defer close(c.decoded)
		report, decodeErr = c.out.Decode(c.stdout, func(r *frame.Report) { heardRep = r; hear() })
		hear()
	}()
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { _ = c.stdin.Close() }) }
	defer release()
	go func() {
		// A container that never reads its stdin must not block the host.
		_, _ = c.stdin.Write(job)
		if !held {
			release()
		}
	}()
	backstop := time.NewTimer(sandbox.EffectiveTimeout(spec.Limits) + r.initGrace + r.backstopMargin)
	defer backstop.Stop()
	var killed, handed error
	select {
	case <-heard:
		// Only a script that ran to its report changes the workspace.
		if held && heardRep != nil && heardRep.Error == "" {
			c.files, handed = b.handBack(ctx, spec)
		}
		release()
	case <-backstop.C:
		o.Backstop = true
		log.Warn("sandbox-init did not report in time; killing the container")
		killed = r.runtimeCall(ctx, "kill", c.id, "KILL")
	case <-ctx.Done():
		o.Cancelled = true
		log.Debug("context ended; killing the container", "cause", context.Cause(ctx))
		killed = r.runtimeCall(ctx, "kill", c.id, "KILL")
	}
	if heardRep != nil && !o.Backstop && !o.Cancelled {
		// Every frame of the script's output precedes the report: the
		// Result is complete, and the container's end is waited for in
		// the background (settle).
		// (init's own stderr is still being copied: it says nothing a
		// report does not.)
		c.answered = true
		o.Report = heardRep
		return o, handed
	}
	exit, serr := r.settle(ctx, c)
	o.InitExit, killed = exit, errors.Join(killed, serr)
	o.Report, o.InitLog = report, c.initLog.FirstLine()
	if o.Cancelled {
		return o, errors.Join(fmt.Errorf("run cancelled: %w", ctx.Err()), killed)
	}
	if o.Report == nil && !o.Backstop {
		log.Warn("sandbox-init ended without a report", "exit_code", o.InitExit, "init_stderr", c.initLog.String())
		return o, errors.Join(sandbox.NoReportError(o.InitExit, o.InitLog, decodeErr), killed)
	}
	return o, errors.Join(killed, handed)
}

// settle waits for the frame stream and the runtime to end, and returns
// the runtime's exit status (-1 unknown). The stream ends when the
// container does: every process in it holds the pipe only while its pid
// namespace lives. Init closing its stdout without dying, or a runtime
// that does not end, is killed after callTimeout.
func (r *Runner) settle(ctx context.Context, c *container) (int, error) {
	var killed error
	limit, stop := context.WithTimeout(context.WithoutCancel(ctx), r.callTimeout)
	defer stop()
	select {
	case <-c.decoded:
	case <-limit.Done():
	}
	select {
	case <-c.exited:
	case <-limit.Done():
	}
	if !isDone(c.decoded) || !isDone(c.exited) {
		killed = r.runtimeCall(ctx, "kill", c.id, "KILL")
		_ = c.stdout.Close()
		<-c.decoded
	}
	waitErr := c.wait()
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
		return 0, killed
	case errors.As(waitErr, &exit):
		return exit.ExitCode(), killed
	}
	return -1, errors.Join(killed, waitErr)
}

// wait waits for the runtime's process and closes the host's pipe ends.
func (c *container) wait() error {
	<-c.exited
	_ = c.stdout.Close()
	return c.waitErr
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// running reports whether the runtime's process still runs.
func (c *container) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}
