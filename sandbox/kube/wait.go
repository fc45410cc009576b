package kube

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// condition says whether a container status is what a wait is for.
type condition func(corev1.ContainerStatus) bool

// running is a container that started: running, or already ended (its
// output is then in the log).
func running(st corev1.ContainerStatus) bool {
	return st.State.Running != nil || st.State.Terminated != nil
}

func terminated(st corev1.ContainerStatus) bool { return st.State.Terminated != nil }

// waitingFailures are container waiting reasons that will not resolve by
// themselves.
var waitingFailures = map[string]bool{
	"ErrImageNeverPull":          true,
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// waitContainer watches the Pod until its container meets cond, fails, or
// the start timeout passes. The watch starts before a read of the current
// state, so no change between the two is missed. A caller whose ctx ends
// first gets its own error: its deadline is not the Pod's start timeout.
func (k *Runner) waitContainer(ctx context.Context, name string, cond condition) (corev1.ContainerStatus, error) {
	wctx, cancel := context.WithTimeout(ctx, k.startTimeout)
	defer cancel()
	return k.watchContainer(ctx, wctx, name, cond)
}

// watchContainer is waitContainer's watch under wctx, the caller's ctx
// bounded by the start timeout.
func (k *Runner) watchContainer(ctx, wctx context.Context, name string, cond condition) (corev1.ContainerStatus, error) {
	pods := k.client.Pods(k.namespace)
	w, err := pods.Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return corev1.ContainerStatus{}, waitError(ctx, name, apiError("watch sandbox pod", err))
	}
	defer w.Stop()
	pod, err := pods.Get(wctx, name, metav1.GetOptions{})
	if err != nil {
		return corev1.ContainerStatus{}, waitError(ctx, name, apiError("read sandbox pod", err))
	}
	last := pod
	scheduled := false
	for {
		if !scheduled && podScheduled(last) {
			scheduled = true
			trace.SpanFromContext(wctx).AddEvent("pod scheduled", trace.WithAttributes(attribute.String("k8s.node.name", last.Spec.NodeName)))
		}
		if st, done, err := judge(last, cond); done {
			return st, err
		}
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The server ended the watch (it does after a while):
				// read the state and watch again.
				return k.watchContainer(ctx, wctx, name, cond)
			}
			switch ev.Type {
			case watch.Deleted:
				return corev1.ContainerStatus{}, fmt.Errorf("%w: pod %s was deleted from outside", ErrPodStart, name)
			case watch.Error:
				return corev1.ContainerStatus{}, apiError("watch sandbox pod", fmt.Errorf("%v", ev.Object))
			}
			if p, ok := ev.Object.(*corev1.Pod); ok {
				last = p
			}
		case <-wctx.Done():
			return corev1.ContainerStatus{}, startTimeout(name, last, ctx.Err())
		}
	}
}

// waitError is err, or the caller's own end when that cut the call short.
func waitError(ctx context.Context, name string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("wait for sandbox pod %s: run cancelled: %w", name, cerr)
	}
	return err
}

// judge says whether pod's container meets cond (done, nil error), has
// failed (done, error) or may still get there (not done).
func judge(pod *corev1.Pod, cond condition) (corev1.ContainerStatus, bool, error) {
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != containerName {
			continue
		}
		if cond(st) {
			return st, true, nil
		}
		if w := st.State.Waiting; w != nil && waitingFailures[w.Reason] {
			if w.Reason == "ErrImageNeverPull" || w.Reason == "InvalidImageName" {
				return st, true, fmt.Errorf("%w: %q is not on node %s: load it into the node's container runtime (pods never pull): %s",
					sandbox.ErrImageNotFound, pod.Spec.Containers[0].Image, pod.Spec.NodeName, w.Message)
			}
			return st, true, fmt.Errorf("%w: %s: %s", ErrPodStart, w.Reason, w.Message)
		}
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return corev1.ContainerStatus{}, true, fmt.Errorf("%w: pod %s ended (%s) before its container ran: %s %s",
			ErrPodStart, pod.Name, pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
	}
	return corev1.ContainerStatus{}, false, nil
}

// startTimeout explains a Pod that did not get there in time, with what
// the scheduler or kubelet last said: in the start timeout (ErrPodStart),
// or before the caller, whose ctx ended with callerErr, went away.
func startTimeout(name string, pod *corev1.Pod, callerErr error) error {
	var why []string
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			why = append(why, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	for _, st := range pod.Status.ContainerStatuses {
		if w := st.State.Waiting; w != nil {
			why = append(why, fmt.Sprintf("%s %s", w.Reason, w.Message))
		}
	}
	detail := "no status from the scheduler or kubelet"
	if len(why) > 0 {
		detail = strings.Join(why, "; ")
	}
	if callerErr == nil {
		return fmt.Errorf("%w: pod %s not running in time (%s)", ErrPodStart, name, detail)
	}
	return fmt.Errorf("wait for sandbox pod %s: run cancelled: %w (%s)", name, callerErr, detail)
}

// podScheduled reports whether the scheduler has placed the Pod.
func podScheduled(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
