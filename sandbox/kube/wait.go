package kube

import (
	"context"
	"errors"
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
// state, so no change between the two is missed.
func (k *Kube) waitContainer(ctx context.Context, name string, cond condition) (corev1.ContainerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, k.startTimeout)
	defer cancel()
	pods := k.client.Pods(k.namespace)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return corev1.ContainerStatus{}, apiError("watch sandbox pod", err)
	}
	defer w.Stop()
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return corev1.ContainerStatus{}, apiError("read sandbox pod", err)
	}
	last := pod
	scheduled := false
	for {
		if !scheduled && podScheduled(last) {
			scheduled = true
			trace.SpanFromContext(ctx).AddEvent("pod scheduled", trace.WithAttributes(attribute.String("k8s.node.name", last.Spec.NodeName)))
		}
		if st, done, err := judge(last, cond); done {
			return st, err
		}
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The server ended the watch (it does after a while):
				// read the state and watch again.
				return k.waitContainer(ctx, name, cond)
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
		case <-ctx.Done():
			return corev1.ContainerStatus{}, startTimeout(name, last, ctx.Err())
		}
	}
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
// the scheduler or kubelet last said.
func startTimeout(name string, pod *corev1.Pod, cause error) error {
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
	if errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("%w: pod %s not running in time (%s)", ErrPodStart, name, detail)
	}
	return fmt.Errorf("wait for sandbox pod %s: %w (%s)", name, cause, detail)
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
