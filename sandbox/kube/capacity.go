package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// capacityTTL is how long the cluster's answer about its largest node and
// the namespace's LimitRanges is kept: nodes come and go, so it is asked
// again, but not by every run.
const capacityTTL = time.Minute

// ceiling is the most one sandbox Pod may ask for in the runner's
// namespace: the largest schedulable node's allocatable, or a LimitRange's
// max when that is smaller. A zero figure is unknown and not checked.
type ceiling struct {
	memory   int64 // bytes
	milliCPU int64
}

// lower takes memory and cpu from list where they are below what c has
// (or c has none).
func (c *ceiling) lower(list corev1.ResourceList) {
	if q, ok := list[corev1.ResourceMemory]; ok && q.Value() > 0 && (c.memory == 0 || q.Value() < c.memory) {
		c.memory = q.Value()
	}
	if q, ok := list[corev1.ResourceCPU]; ok && q.MilliValue() > 0 && (c.milliCPU == 0 || q.MilliValue() < c.milliCPU) {
		c.milliCPU = q.MilliValue()
	}
}

// largestNode is the most any one schedulable node can give a Pod, field
// by field.
func largestNode(nodes []corev1.Node) ceiling {
	var c ceiling
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			continue
		}
		if q := n.Status.Allocatable.Memory(); q.Value() > c.memory {
			c.memory = q.Value()
		}
		if q := n.Status.Allocatable.Cpu(); q.MilliValue() > c.milliCPU {
			c.milliCPU = q.MilliValue()
		}
	}
	return c
}

// limitRangeMax lowers c to the max a LimitRange sets for a container or
// a Pod (a sandbox Pod has one container, so both bound it).
func (c *ceiling) limitRangeMax(ranges []corev1.LimitRange) {
	for _, r := range ranges {
		for _, item := range r.Spec.Limits {
			if item.Type == corev1.LimitTypeContainer || item.Type == corev1.LimitTypePod {
				c.lower(item.Max)
			}
		}
	}
}

// host is c as the engine checks it (sandbox.CheckHost): a node's
// allocatable cpu need not be whole.
func (c ceiling) host() sandbox.HostCapacity {
	return sandbox.HostCapacity{MemoryBytes: c.memory, MilliCPUs: c.milliCPU, CPUs: int(c.milliCPU / 1000)}
}

// readCeiling asks the cluster: nodes, then the namespace's LimitRanges.
// Forbidden is an answer (nothing known from there), other failures are
// errors.
func (k *Runner) readCeiling(ctx context.Context) (ceiling, error) {
	if err := ctx.Err(); err != nil {
		return ceiling{}, fmt.Errorf("check the run against the cluster: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	var c ceiling
	nodes, err := k.client.Nodes().List(cctx, metav1.ListOptions{})
	nodesHidden := apierrors.IsForbidden(err)
	switch {
	case nodesHidden:
	case err != nil:
		return ceiling{}, callerGone(ctx, apiError("list nodes for their allocatable memory and cpu", err))
	default:
		c = largestNode(nodes.Items)
	}
	ranges, err := k.client.LimitRanges(k.namespace).List(cctx, metav1.ListOptions{})
	rangesHidden := apierrors.IsForbidden(err)
	switch {
	case rangesHidden:
	case err != nil:
		return ceiling{}, callerGone(ctx, apiError("list limit ranges in namespace "+k.namespace, err))
	default:
		c.limitRangeMax(ranges.Items)
	}
	if nodesHidden && k.nodesWarned.CompareAndSwap(false, true) {
		what := "only the namespace's LimitRanges bound a run's memory and cpus"
		if rangesHidden {
			what = "runs are not checked against the cluster's capacity: one that asks more than any node has waits in Pending until the start timeout"
		}
		k.log.Warn("cannot list nodes (grant list on nodes, hack/k8s-rbac.yaml); "+what, "namespace", k.namespace)
	}
	return c, nil
}

// callerGone is err, or the caller's own end when that cut the call
// short: the server was not the trouble.
func callerGone(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("check the run against the cluster: %w", cerr)
	}
	return err
}
