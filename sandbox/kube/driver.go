package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// driver is the Kubernetes backend as the engine drives it: a Spec becomes
// a Pod (pod.go), and its sandbox that Pod, created, running and attached,
// with sandbox-init waiting for its job.
type driver struct{ k *Runner }

var _ engine.Driver = driver{}

func (driver) Name() string { return "kubernetes" }

// Capacity is the most one Pod may ask for in the namespace: the largest
// schedulable node's allocatable, or a LimitRange's max when smaller
// (capacity.go). The engine asks again after capacityTTL.
func (d driver) Capacity(ctx context.Context) (sandbox.HostCapacity, error) {
	c, err := d.k.readCeiling(ctx)
	if err != nil {
		return sandbox.HostCapacity{}, err
	}
	return c.host(), nil
}

// Check refuses a folder no claim or host path can mount (before any API
// call when host paths are off), and a run without network before a probe
// Pod has proven that Pods here have loopback only. The probe is a Pod:
// a run the cluster cannot hold is refused first (the engine's capacity
// check, whose answer is kept).
func (d driver) Check(ctx context.Context, spec *sandbox.Spec) error {
	if err := d.k.checkSources(ctx, spec); err != nil {
		return err
	}
	if spec.Limits.Network {
		return nil
	}
	if err := d.k.eng.CheckSpec(ctx, *spec); err != nil {
		return err
	}
	return d.k.CheckNetwork(ctx)
}

// plan is what a run's Pod is made with besides its Spec.
type plan struct {
	// wsSize sizes a writable workspace's tmpfs (sandbox.WorkspaceSize):
	// a session at its quota gets room to run. The Result keeps the cap.
	wsSize int64
	// control marks the isolation probe's control Pod (connprobe.go): a
	// sandbox Pod but for the label the deny-all policy selects.
	control bool
}

// Plan sizes a writable workspace and keys the Pod (podKey). The Pod
// reaches the run's egress proxy over the side channel, bound when the run
// takes it: a warm Pod needs no slot.
func (d driver) Plan(_ context.Context, tmpl *sandbox.Spec) (engine.Plan, error) {
	var p plan
	if tmpl.WorkspaceWritable {
		var err error
		if p.wsSize, err = sandbox.WorkspaceSize(tmpl); err != nil {
			return engine.Plan{}, err
		}
	}
	return engine.Plan{Key: d.k.podKey(p.sized(tmpl)), Data: &p, Relays: true}, nil
}

// sized is spec with the workspace's size as its write limit, as its Pod
// is made.
func (p *plan) sized(spec *sandbox.Spec) *sandbox.Spec {
	s := *spec
	if s.WorkspaceWritable {
		s.Limits.WorkspaceWriteBytes = p.wsSize
	}
	return &s
}

// podKey identifies the Pod a run of spec gets, short of what names one
// run (its name, run id, creation time): podFor with those left empty,
// hashed. Two specs with equal keys get Pods that differ in nothing else:
// image, mounts, limits, deadline, security, labels. Whatever podFor comes
// to read of the Spec is in the key without a change here.
func (k *Runner) podKey(spec *sandbox.Spec) string {
	tmpl := *spec
	tmpl.RunID = ""
	p := k.podParams(&tmpl)
	p.created = time.Time{}
	b, err := json.Marshal(podFor(&tmpl, p))
	if err != nil {
		return "" // cannot happen for a Pod; no key, no pooling
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// warmRunIDPrefix marks the name of a Pod started ahead of its run:
// `kubectl get pods` shows sandboxrun-warm-... while it waits. The run
// that takes it puts its own run id in the labels (box.claim).
const warmRunIDPrefix = "warm-"

// refillDelay is how long a warm start waits before it creates a Pod. A
// process that runs once and exits (the CLI) closes the runner within it,
// so it never creates a Pod only to delete it; against a Pod's start of a
// second or more, a server's next run hardly notices.
const refillDelay = 250 * time.Millisecond

// Start creates tmpl's Pod, waits until its container runs and attaches
// to it. A Pod started ahead (engine.Ahead) is named warm-..., and its
// activeDeadlineSeconds is longer by the time it may wait for its run.
// The box names what to delete, also on error.
func (d driver) Start(ctx context.Context, tmpl *sandbox.Spec, ep engine.Plan) (engine.Box, error) {
	k := d.k
	p, ok := ep.Data.(*plan)
	if !ok {
		return nil, fmt.Errorf("start a sandbox pod: a plan of another driver (%T)", ep.Data)
	}
	spec := p.sized(tmpl)
	ahead := engine.Ahead(ctx)
	var pod *corev1.Pod
	if ahead {
		t := time.NewTimer(refillDelay)
		select {
		case <-t.C:
		case <-engine.Caller(ctx).Done():
			t.Stop()
			return nil, fmt.Errorf("warm start cancelled: %w", engine.Left(ctx))
		}
		pod = k.warmPodFor(spec, warmRunIDPrefix+tmpl.RunID, k.maxIdle)
	} else {
		pod = podFor(spec, k.podParams(spec))
	}
	if p.control {
		pod.Labels[sandbox.LabelManaged] = controlManaged
	}
	b := &box{k: k, runID: tmpl.RunID, name: pod.Name, created: time.Now(), warm: ahead, wsSize: p.wsSize}
	imageID, err := k.startPod(ctx, pod)
	if err != nil {
		return b, err
	}
	b.imageID, b.sess = imageID, k.attach(pod.Name)
	return b, nil
}

// warmPodFor is the Pod started ahead for runs like tmpl: the one a cold
// run gets, named for runID, with an activeDeadlineSeconds longer by
// maxIdle, as the deadline counts from the Pod's start and the Pod may
// wait that long for its job.
func (k *Runner) warmPodFor(tmpl *sandbox.Spec, runID string, maxIdle time.Duration) *corev1.Pod {
	t := *tmpl
	t.RunID = runID
	p := k.podParams(&t)
	p.deadline += maxIdle
	return podFor(&t, p)
}

// startPod creates pod and waits until its container runs; it returns the
// image the container runs, by id. The caller deletes the Pod by name,
// also when this fails. ctx is the engine's, never cancelled (an API
// server finishes a create whose client gave up, and a delete by name that
// came first would find nothing): a caller that left (engine.Left) ends
// the start once the create has its answer.
func (k *Runner) startPod(ctx context.Context, pod *corev1.Pod) (imageID string, err error) {
	cctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	cctx, sp := telemetry.Start(cctx, "pod.create")
	_, err = k.client.Pods(k.namespace).Create(cctx, pod, metav1.CreateOptions{})
	cancel()
	if err == nil && engine.Left(ctx) != nil {
		err = fmt.Errorf("run cancelled while its pod was created: %w", engine.Left(ctx))
	}
	if err != nil {
		if apierrors.IsInvalid(err) {
			err = fmt.Errorf("%w: the API server refused the pod: %w", sandbox.ErrInvalidSpec, err)
		} else if engine.Left(ctx) == nil {
			err = apiError("create sandbox pod", err)
		}
		endSpan(sp, err)
		return "", err
	}
	endSpan(sp, nil)
	// The wait ends with the caller: its Pod is deleted by name.
	sctx, sp := telemetry.Start(engine.Caller(ctx), "pod.start")
	st, err := k.waitContainer(sctx, pod.Name, running)
	endSpan(sp, err)
	if err != nil {
		return "", err
	}
	return st.ImageID, nil
}

func (k *Runner) podParams(spec *sandbox.Spec) podParams {
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
		skillSendMax: k.skillSendMax(),
	}
}
