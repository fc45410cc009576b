package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Run executes spec in a Pod of its own (new, or started ahead by the warm
// pool, WithWarmPool) and deletes the Pod before it returns, also when ctx
// is cancelled (deletion then runs under context.WithoutCancel with its
// own timeout). The Result follows the same conventions as the Docker
// runner's (sandbox.Runner).
//
// A nil Result comes only with a refusal before any Pod exists (the error
// matches sandbox.ErrInvalidSpec, ErrSkillUnreadable, ErrWorkspace or
// ErrBeyondHost, or ErrNetworkNotIsolated), with the cluster unreachable
// while it was asked about its nodes (CheckSpec), or with ctx ending
// before the run had a slot.
func (k *Kube) Run(ctx context.Context, spec sandbox.Spec) (res *sandbox.Result, err error) {
	if _, err := sandbox.PrepareSpec(&spec, k.image, sandbox.IdentityFor(0, 0)); err != nil {
		return nil, err
	}
	if spec.WorkspaceWritable && spec.Changes == nil {
		return nil, fmt.Errorf("%w: a writable workspace needs Spec.Changes, which applies what the run changed (a sandboxrun.Service sets it)", sandbox.ErrInvalidSpec)
	}
	if err := k.checkSources(ctx, &spec); err != nil {
		return nil, err
	}
	if err := k.CheckSpec(ctx, spec); err != nil {
		return nil, err
	}
	if !spec.Limits.Network {
		if err := k.CheckNetwork(ctx); err != nil {
			return nil, err
		}
	}
	wsSize, err := workspaceSize(&spec)
	if err != nil {
		return nil, err
	}
	ctx, sp := telemetry.Start(ctx, "sandbox.run", attribute.String("container.runtime", "kubernetes"),
		attribute.String("sandboxrun.run_id", spec.RunID), attribute.String("container.image.name", spec.Image))
	defer func() { endSpan(sp, err) }()
	_, queued := telemetry.Start(ctx, "sandbox.queue")
	res, end, err := sandbox.Begin(ctx, k.sem, &spec)
	endSpan(queued, err)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	// From here on, the limit sizes the Pod's workspace (a session at its
	// quota gets room to run). The Result keeps the cap.
	if spec.WorkspaceWritable {
		spec.Limits.WorkspaceWriteBytes = wsSize
	}
	key := k.pool.key(&spec)
	wp := k.pool.take(ctx, key, &spec)
	k.pool.counts(key, wp != nil)
	sp.SetAttributes(attribute.Bool("sandboxrun.warm", wp != nil))
	defer func() {
		// Once this run has its Result and its Pod is deleted, the next
		// run like it finds a Pod waiting; a Pod that did not start says
		// nothing would.
		if res.Started {
			k.pool.refill(&spec, key)
		}
	}()
	return res, k.execute(ctx, &spec, res, wp)
}

// execute is one Pod's life: create it and wait until its container runs
// (or take wp, a warm Pod already running and attached), send the job,
// read frames until the report, delete the Pod.
func (k *Kube) execute(ctx context.Context, spec *sandbox.Spec, res *sandbox.Result, wp *warmPod) (err error) {
	began := time.Now()
	name, sess, imageID := podName(spec.RunID), (*attachment)(nil), ""
	if wp != nil {
		name, sess, imageID = wp.name, wp.sess, wp.imageID
	}
	log := k.log.With("skill", spec.Skill, "run_id", spec.RunID, "pod", name, "warm", wp != nil)
	// A create cut short may still have made the Pod: delete by name
	// whatever the answer.
	defer func() {
		if derr := k.deletePod(ctx, name, k.deleteGrace); derr != nil {
			log.Warn("delete sandbox pod", "error", derr)
			err = errors.Join(err, derr)
		}
	}()
	if sess == nil {
		if imageID, err = k.startPod(ctx, podFor(spec, k.podParams(spec))); err != nil {
			return err
		}
		sess = k.attach(name)
	}
	res.Started = true
	sp := trace.SpanFromContext(ctx)
	sp.SetAttributes(attribute.String("k8s.pod.name", name))
	o := k.stream(ctx, spec, name, sess, log)
	o.ImageID = imageID
	o.Duration = time.Since(began)
	o.out.Finish(res, o.Outcome)
	telemetry.EventAt(sp, "job sent", o.sentAt)
	telemetry.EventAt(sp, "first output byte", o.out.FirstOutputAt())
	telemetry.EventAt(sp, "result frame", o.out.ReportAt())
	if spec.WorkspaceWritable && o.Report != nil {
		res.WorkspaceUsedBytes = o.Report.HoldUsedBytes
		res.WorkspaceFull = o.Report.HoldFreeBytes < sandbox.PageSize
		res.Files = o.files
	}
	log.Debug("sandbox finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"oom_killed", res.OOMKilled, "duration_ms", res.DurationMS)
	return o.err
}

// startPod creates pod and waits until its container runs; it returns the
// image the container runs, by id. The caller deletes the Pod by name,
// also when this fails.
//
// The create is not cut short by ctx: an API server finishes a create
// whose client gave up, and the delete by name that follows would then
// come first and find nothing, leaving the Pod. So the create runs to its
// answer (or its own timeout), and only then does a caller that left end
// the start.
func (k *Kube) startPod(ctx context.Context, pod *corev1.Pod) (imageID string, err error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.callTimeout)
	cctx, sp := telemetry.Start(cctx, "pod.create")
	_, err = k.client.Pods(k.namespace).Create(cctx, pod, metav1.CreateOptions{})
	cancel()
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("run cancelled while its pod was created: %w", ctx.Err())
		endSpan(sp, err)
		return "", err
	}
	if err != nil {
		if apierrors.IsInvalid(err) {
			err = fmt.Errorf("%w: the API server refused the pod: %w", sandbox.ErrInvalidSpec, err)
		} else {
			err = apiError("create sandbox pod", err)
		}
		endSpan(sp, err)
		return "", err
	}
	endSpan(sp, nil)
	sctx, sp := telemetry.Start(ctx, "pod.start")
	st, err := k.waitContainer(sctx, pod.Name, running)
	endSpan(sp, err)
	if err != nil {
		return "", err
	}
	return st.ImageID, nil
}

func (k *Kube) podParams(spec *sandbox.Spec) podParams {
	return podParams{
		namespace:    k.namespace,
		image:        spec.Image,
		runtimeClass: k.runtimeClass,
		pullPolicy:   k.pullPolicy,
		version:      k.version,
		owner:        k.owner,
		created:      k.now(),
		deadline:     sandbox.EffectiveTimeout(spec.Limits) + k.initGrace + k.backstopMargin + startAllowance,
		deleteGrace:  k.deleteGrace,
		claims:       k.claims,
	}
}

// streamed is what the attach (or the log fallback) gave.
type streamed struct {
	sandbox.Outcome
	sentAt time.Time // when the job went out (zero: it did not)
	out    *sandbox.Output
	files  []sandbox.FileChange // what the workspace's hand-back changed
	err    error
}

// stream sends the job over the attachment and reads frames until the
// report, the end of the stream, the backstop or ctx. Without a report it
// waits for the container to end and reads what it wrote from the Pod's
// log.
func (k *Kube) stream(ctx context.Context, spec *sandbox.Spec, name string, sess *attachment, log *slog.Logger) (s streamed) {
	defer sess.stop()
	s = streamed{Outcome: sandbox.Outcome{InitExit: -1}, out: sandbox.NewOutput(spec)}
	jf, ch, err := k.jobFor(spec, log)
	if err != nil {
		s.err = err
		return s
	}
	job, err := json.Marshal(jf)
	if err != nil {
		s.err = fmt.Errorf("encode job: %w", err)
		return s
	}
	var then func()
	if ch != nil {
		s.out.SetChannel(ch.inW)
		then = func() {
			if err := ch.start(sess.stdin); err != nil {
				log.Warn("side channel", "error", err)
			}
		}
		defer func() {
			files, err := ch.close()
			s.files = files
			s.err = errors.Join(s.err, err)
		}()
	}
	sess.send(job, then)
	s.sentAt = time.Now()
	heard := make(chan struct{}, 1)
	decoded := make(chan error, 1)
	go func() {
		rep, err := s.out.Decode(sess.frames, func(r *frame.Report) {
			if ch != nil {
				ch.report(r.Error == "")
			}
			heard <- struct{}{}
		})
		s.Report = rep
		sess.frames.CloseWithError(errStopped) // the attach goes on regardless
		decoded <- err
	}()
	// After the report: init hands a writable workspace back before it
	// ends.
	afterReport := k.callTimeout
	if spec.WorkspaceWritable {
		afterReport += handBackTimeout
	}

	backstop := time.NewTimer(sandbox.EffectiveTimeout(spec.Limits) + k.initGrace + k.backstopMargin)
	defer backstop.Stop()
	var decodeErr error
	select {
	case <-heard:
		// The report is in: the stream ends as init exits, unless the
		// connection hangs, which must not hold the run.
		select {
		case decodeErr = <-decoded:
		case <-time.After(afterReport):
			sess.stop()
			decodeErr = <-decoded
		}
	case decodeErr = <-decoded:
	case <-backstop.C:
		s.Backstop = true
		log.Warn("sandbox-init did not report in time; deleting the pod")
	case <-ctx.Done():
		s.Cancelled = true
		log.Debug("context ended; deleting the pod", "cause", context.Cause(ctx))
	}
	if s.Backstop || s.Cancelled {
		kill := k.deletePod(ctx, name, 0)
		sess.close()
		// What the stream said after the kill is no news.
		if err := errors.Join(<-decoded, sess.err); err != nil {
			log.Debug("stream after the pod was deleted", "error", err)
		}
		s.InitLog = sess.initLog.FirstLine()
		if s.Cancelled {
			s.err = errors.Join(fmt.Errorf("run cancelled: %w", ctx.Err()), kill)
		} else {
			s.err = kill
		}
		return s
	}
	<-sess.done
	attachErr := sess.err
	s.InitLog = sess.initLog.FirstLine()
	if s.Report != nil {
		return s
	}
	// No report on the attach stream: the stream broke, or init died.
	// The container's end says which, and its log holds the frames.
	st, werr := k.waitContainer(ctx, name, terminated)
	if werr != nil {
		s.err = errors.Join(werr, attachErr)
		return s
	}
	if t := st.State.Terminated; t != nil {
		s.InitExit = int(t.ExitCode)
		s.OOMKilled = t.Reason == "OOMKilled"
	}
	if fb, ok := k.fromLog(ctx, spec, name, log); ok {
		fb.InitExit, fb.OOMKilled, fb.InitLog = s.InitExit, s.OOMKilled, s.InitLog
		return fb
	}
	if !s.OOMKilled {
		log.Warn("sandbox-init ended without a report", "exit_code", s.InitExit, "init_stderr", sess.initLog.String())
		s.err = errors.Join(sandbox.NoReportError(s.InitExit, s.InitLog, decodeErr), attachErr)
	}
	return s
}

var errStopped = errors.New("frame decoding stopped")

// fromLog decodes the frames from the container's log, for a run whose
// attach stream lost them. The log mixes init's own stderr into stdout,
// so it serves only when it decodes cleanly to a report.
func (k *Kube) fromLog(ctx context.Context, spec *sandbox.Spec, name string, log *slog.Logger) (streamed, bool) {
	quiet := *spec
	quiet.Stdout, quiet.Stderr = nil, nil // the live writers had their chance
	s := streamed{Outcome: sandbox.Outcome{InitExit: -1}, out: sandbox.NewOutput(&quiet)}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.callTimeout)
	defer cancel()
	rc, err := k.podLog(cctx, name)
	if err != nil {
		log.Debug("read sandbox pod log", "error", err)
		return s, false
	}
	defer rc.Close()
	rep, err := s.out.Decode(rc, nil)
	if err != nil || rep == nil {
		log.Debug("sandbox pod log holds no report", "error", err)
		return s, false
	}
	log.Info("output recovered from the pod log after the attach stream lost it")
	s.Report = rep
	return s, true
}

// podLog streams the sandbox container's log.
func (k *Kube) podLog(ctx context.Context, name string) (io.ReadCloser, error) {
	if k.logSource != nil {
		return k.logSource(ctx, name)
	}
	return k.client.Pods(k.namespace).GetLogs(name, &corev1.PodLogOptions{Container: containerName}).Stream(ctx)
}

// deletePod deletes the Pod without waiting for it to go: the kubelet
// stops it (after grace) and the API server removes it. A Pod already
// gone is not an error.
func (k *Kube) deletePod(ctx context.Context, name string, grace time.Duration) (err error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.callTimeout)
	defer cancel()
	cctx, sp := telemetry.Start(cctx, "pod.delete")
	defer func() { endSpan(sp, err) }()
	secs := int64(grace.Seconds())
	bg := metav1.DeletePropagationBackground
	err = k.client.Pods(k.namespace).Delete(cctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &secs, PropagationPolicy: &bg,
	})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return apiError("delete sandbox pod "+name, err)
}
