package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// warmRunIDPrefix marks the run id, and so the name, of a Pod started
// ahead of its run: `kubectl get pods` shows sandboxrun-warm-... while it
// waits. The run that takes it puts its own run id in the labels.
const warmRunIDPrefix = "warm-"

// podKey identifies the Pod a run of spec gets, short of what names one
// run (its name, run id, creation time): podFor with those left empty,
// hashed. Two specs with equal keys get Pods that differ in nothing else:
// image, mounts, limits, deadline, security, labels. Whatever podFor comes
// to read of the Spec is in the key without a change here.
func (k *Kube) podKey(spec *sandbox.Spec) string {
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

// warmPodFor is the Pod started ahead for runs like tmpl: the one a cold
// run gets, named for a run id of its own, with an activeDeadlineSeconds
// longer by maxIdle, as the deadline counts from the Pod's start and the
// Pod may wait that long for its job.
func (k *Kube) warmPodFor(tmpl *sandbox.Spec, runID string, maxIdle time.Duration) *corev1.Pod {
	t := *tmpl
	t.RunID = runID
	p := k.podParams(&t)
	p.deadline += maxIdle
	return podFor(&t, p)
}

// refillDelay is how long a refill waits before it creates a Pod. A
// process that runs once and exits (the CLI) closes the runner within it,
// so it never creates a Pod only to delete it; against a Pod's start of a
// second or more, a server's next run hardly notices.
const refillDelay = 250 * time.Millisecond

// start creates a warm Pod for tmpl, waits until it runs and attaches to
// it; ctx ends when the pool closes. On error the warmPod, when not nil, names what to delete.
func (p *warmPool) start(ctx context.Context, tmpl sandbox.Spec) (*warmPod, error) {
	select {
	case <-time.After(refillDelay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	id, err := sandbox.NewRunID()
	if err != nil {
		return nil, err
	}
	tmpl.RunID = warmRunIDPrefix + id
	pod := p.k.warmPodFor(&tmpl, tmpl.RunID, p.maxIdle)
	w := &warmPod{name: pod.Name, created: time.Now()}
	if w.imageID, err = p.k.startPod(ctx, pod); err != nil {
		return w, err
	}
	w.sess = p.k.attach(pod.Name)
	if msg, ok := sandbox.Prelude(&tmpl, p.k.version); ok {
		// Written before any job: the run that takes the Pod writes
		// its job after this returns. The write waits for the attach.
		if _, err := w.sess.stdin.Write(msg); err != nil {
			return w, fmt.Errorf("send the prelude to a warm sandbox pod: %w", err)
		}
	}
	return w, nil
}

// claim makes w the Pod of spec's run: its run id in the labels (so the
// reaper, kubectl and the run's own checks see it) and
// activeDeadlineSeconds cut back to what a cold Pod of that run gets,
// counted from now. The API server allows a deadline to shrink only, so a
// Pod that waited longer than maxIdle is not used. The answer also says
// whether the Pod is still up.
func (p *warmPool) claim(ctx context.Context, w *warmPod, spec *sandbox.Spec) error {
	if !w.sess.alive() {
		return fmt.Errorf("its attach ended while it waited: %w", w.sess.err)
	}
	age := time.Since(w.created)
	if age >= p.maxIdle {
		return fmt.Errorf("it waited %s, longer than %s", age.Round(time.Second), p.maxIdle)
	}
	deadline := int64(math.Ceil((p.k.podParams(spec).deadline + age).Seconds()))
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
	cctx, cancel := context.WithTimeout(ctx, p.k.callTimeout)
	defer cancel()
	pod, err := p.k.client.Pods(p.k.namespace).Patch(cctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{})
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
