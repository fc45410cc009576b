package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// box is one sandbox Pod and its attach.
type box struct {
	k       *Runner
	runID   string
	name    string
	created time.Time // before the create call, so its age is never underestimated
	warm    bool      // started ahead: claim it when a run binds
	wsSize  int64
	imageID string
	sess    *attachment // nil until the container runs

	// ch is the run's side channel, set by Bind when the run needs one;
	// the job's write starts it.
	ch        *hostChannel
	chStarted bool

	delOnce sync.Once
	delErr  error
	killed  bool
}

// The box's abilities beyond engine.Box.
var (
	_ engine.Box       = (*box)(nil)
	_ engine.Settler   = (*box)(nil)
	_ engine.Recoverer = (*box)(nil)
)

func (b *box) RunID() string { return b.runID }

// Alive: the attach is up and the Pod has not outlived what its deadline
// allows a wait (claim).
func (b *box) Alive() bool {
	return b.sess != nil && b.sess.alive() && time.Since(b.created) < b.k.maxIdle
}

// Bind claims a warm Pod for the run, and gives the run a side channel
// when it has an egress proxy, a writable workspace, a skill folder to
// send (WithSkillSend) or asks for live usage (usage.go): what the Docker
// backend mounts goes over the attach instead (channel.go). A writable
// workspace is a tmpfs filled over the channel, and handed back over it
// after the report, not held: the job has no HoldDir.
func (b *box) Bind(ctx context.Context, run *engine.Run) error {
	spec := run.Spec
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("k8s.pod.name", b.name))
	if b.warm {
		if err := b.claim(ctx, spec); err != nil {
			b.k.log.Warn("warm sandbox pod unusable", "pod", b.name, "error", err)
			return fmt.Errorf("%w: warm sandbox pod %s: %w", engine.ErrRetry, b.name, err)
		}
	}
	run.Job.HoldDir = ""
	sendSkill := sendsSkill(spec, b.k.claims, b.k.skillSendMax())
	if spec.EgressSocket == "" && !spec.WorkspaceWritable && spec.UsageEvery <= 0 && !sendSkill {
		return nil
	}
	job := &run.Job
	job.Channel = true
	var skillTar []byte
	if sendSkill {
		// Packed when the run was checked: this is the cache's copy.
		a, err := b.k.skillArchive(spec)
		if err != nil {
			return err
		}
		skillTar = a.Tar
		job.Skill = &frame.SkillFiles{Dir: sandbox.SkillMount(spec.Skill), ModesOnly: b.k.modesOnly}
	}
	if spec.EgressSocket != "" {
		e := &frame.Egress{Listen: sandbox.ProxyAddr, Channel: true}
		if spec.EgressCA != "" {
			ca, err := readCABundle(spec.EgressCA)
			if err != nil {
				return err
			}
			e.CABundle, e.CAPath = ca, sandbox.EgressCAPath
		}
		job.Egress = e
	}
	if spec.WorkspaceWritable {
		job.Workspace = &frame.Workspace{Dir: sandbox.WorkspaceDir}
	}
	b.ch = newHostChannel(spec, b.wsSize, b.k.log.With("run_id", spec.RunID, "pod", b.name))
	b.ch.skill = skillTar
	run.Output.SetChannel(b.ch.inW)
	return nil
}

// claim makes the warm Pod the Pod of spec's run: its run id in the labels
// (so the reaper, kubectl and the run's own checks see it) and
// activeDeadlineSeconds cut back to what a cold Pod of that run gets,
// counted from now. The API server allows a deadline to shrink only, so a
// Pod that waited longer than maxIdle is not used. The answer also says
// whether the Pod is still up.
func (b *box) claim(ctx context.Context, spec *sandbox.Spec) error {
	k := b.k
	age := time.Since(b.created)
	if age >= k.maxIdle {
		return fmt.Errorf("it waited %s, longer than %s", age.Round(time.Second), k.maxIdle)
	}
	deadline := int64(math.Ceil((k.podParams(spec).deadline + age).Seconds()))
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]string{sandbox.LabelRunID: labelValue(spec.RunID)},
			"annotations": map[string]string{sandbox.LabelRunID: spec.RunID},
		},
		"spec": map[string]any{"activeDeadlineSeconds": deadline},
	})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	pod, err := k.client.Pods(k.namespace).Patch(cctx, b.name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return apiError("claim warm sandbox pod", err)
	}
	if pod.DeletionTimestamp != nil {
		return errors.New("it is being deleted")
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == containerName && st.State.Running == nil {
			return errors.New("its container is not running")
		}
	}
	return nil
}

// Input is the attach's stdin. The write after Bind is the job's: a side
// channel then starts on the stream, which it keeps to its end, so Close
// leaves stdin open for it.
func (b *box) Input() io.WriteCloser { return input{b} }

type input struct{ b *box }

func (in input) Write(p []byte) (int, error) {
	b := in.b
	n, err := b.sess.stdin.Write(p)
	if err == nil && b.ch != nil && !b.chStarted {
		b.chStarted = true
		if err := b.ch.start(b.sess.stdin); err != nil {
			b.k.log.Warn("side channel", "pod", b.name, "error", err)
		}
	}
	return n, err
}

func (in input) Close() error {
	if in.b.ch != nil {
		return nil // the channel's; it ends with the attach
	}
	return in.b.sess.stdin.Close()
}

func (b *box) Frames() io.Reader { return b.sess.frames }

func (b *box) InitLog() *sandbox.InitLog { return b.sess.initLog }

func (b *box) ImageID(context.Context) string { return b.imageID }

// HandBack says the report is in and waits until init has handed the
// workspace's changes over the channel and they are applied, or the
// attach has ended, or the hand-back's time is up.
func (b *box) HandBack(ctx context.Context, _ *engine.Run) ([]sandbox.FileChange, error) {
	if b.ch == nil {
		return nil, nil
	}
	b.ch.report(true)
	t := time.NewTimer(handBackTimeout + b.k.callTimeout)
	defer t.Stop()
	select {
	case <-b.ch.handedBack:
	case <-b.sess.done:
	case <-t.C:
	case <-ctx.Done():
	}
	return b.ch.handBack()
}

// Kill deletes the Pod at once and ends the attach; what the stream says
// after that is no news (a warm Pod's init answers with a report no run
// reads), so the frames are closed too.
func (b *box) Kill(ctx context.Context) error {
	b.killed = true
	err := b.delete(ctx, 0)
	if b.sess != nil {
		b.sess.stop()
		b.sess.frames.CloseWithError(errStopped)
	}
	return err
}

// Settle waits, at most the call timeout, for the attach to end, as it
// does once init exits, then ends it: a connection that hangs must not
// hold the teardown.
func (b *box) Settle(context.Context) error {
	if b.sess != nil {
		b.sess.await(b.k.callTimeout)
		b.sess.frames.CloseWithError(errStopped)
	}
	return nil
}

var errStopped = errors.New("frame decoding stopped")

// End waits for the attach to end and for the container to terminate,
// each at most the call timeout (deleting the Pod when it does not), and
// reads the container's exit status and whether it was OOM-killed from
// the Pod's status.
func (b *box) End(ctx context.Context) (engine.Ending, error) {
	end := engine.Ending{InitExit: -1, ImageID: b.imageID}
	if b.sess == nil {
		return end, nil
	}
	_ = b.Settle(ctx)
	if b.killed {
		return end, nil // the Pod is gone, and with it its status
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.k.callTimeout)
	defer cancel()
	st, err := b.k.watchContainer(cctx, cctx, b.name, terminated)
	if err != nil {
		return end, errors.Join(err, b.delete(ctx, 0))
	}
	if t := st.State.Terminated; t != nil {
		end.InitExit, end.OOMKilled = int(t.ExitCode), t.Reason == "OOMKilled"
	}
	return end, nil
}

// EndReported ends a sandbox whose init reported without the OOM-kill
// count (a Pod's init is not at the root of its memory cgroup under
// cgroup v1): the attach ends as init exits, and the Pod's status is read
// once. The kubelet posts the container's end up to a second later, so a
// status not yet terminated leaves the exit and the OOM flag unknown (the
// Result then judges OOM by the peak memory, as before the engine) rather
// than holding every run that long.
func (b *box) EndReported(ctx context.Context) (engine.Ending, error) {
	end := engine.Ending{InitExit: -1, ImageID: b.imageID}
	if b.sess == nil {
		return end, nil
	}
	_ = b.Settle(ctx)
	if b.killed {
		return end, nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.k.callTimeout)
	defer cancel()
	pod, err := b.k.client.Pods(b.k.namespace).Get(cctx, b.name, metav1.GetOptions{})
	if err != nil {
		// How it ended is unknown; the run was answered.
		return end, nil
	}
	st, done, _ := judge(pod, terminated)
	if t := st.State.Terminated; done && t != nil {
		end.InitExit, end.OOMKilled = int(t.ExitCode), t.Reason == "OOMKilled"
	}
	return end, nil
}

// Recover streams the container's log, which holds init's frames (with
// its own stderr mixed in), for a run whose attach stream lost them.
func (b *box) Recover(ctx context.Context) (io.ReadCloser, error) {
	cctx, cancel := context.WithTimeout(ctx, b.k.callTimeout)
	rc, err := b.k.podLog(cctx, b.name)
	if err != nil {
		cancel()
		return nil, err
	}
	return cancelOnClose{rc, cancel}, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	defer c.cancel()
	return c.ReadCloser.Close()
}

// Remove deletes the Pod (after its grace, unless it was killed), ends the
// attach and the side channel, whose hand-back is over.
func (b *box) Remove(ctx context.Context) error {
	err := b.delete(ctx, b.k.deleteGrace)
	if b.sess != nil {
		b.sess.close()
	}
	if b.ch != nil {
		_, _ = b.ch.close()
	}
	return err
}

// delete deletes the Pod once, with grace.
func (b *box) delete(ctx context.Context, grace time.Duration) error {
	b.delOnce.Do(func() { b.delErr = b.k.deletePod(ctx, b.name, grace) })
	return b.delErr
}

// podLog streams the sandbox container's log.
func (k *Runner) podLog(ctx context.Context, name string) (io.ReadCloser, error) {
	if k.logSource != nil {
		return k.logSource(ctx, name)
	}
	return k.client.Pods(k.namespace).GetLogs(name, &corev1.PodLogOptions{Container: containerName}).Stream(ctx)
}

// deletePod deletes the Pod without waiting for it to go: the kubelet
// stops it (after grace) and the API server removes it. A Pod already
// gone is not an error.
func (k *Runner) deletePod(ctx context.Context, name string, grace time.Duration) (err error) {
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
