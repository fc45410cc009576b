package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
	// Where each figure comes from, for the refusal.
	memoryFrom, cpuFrom string
}

// lower takes memory and cpu from list where they are below what c has
// (or c has none), naming from as their source.
func (c *ceiling) lower(list corev1.ResourceList, from string) {
	if q, ok := list[corev1.ResourceMemory]; ok && q.Value() > 0 && (c.memory == 0 || q.Value() < c.memory) {
		c.memory, c.memoryFrom = q.Value(), fmt.Sprintf("%s memory %s", from, q.String())
	}
	if q, ok := list[corev1.ResourceCPU]; ok && q.MilliValue() > 0 && (c.milliCPU == 0 || q.MilliValue() < c.milliCPU) {
		c.milliCPU, c.cpuFrom = q.MilliValue(), fmt.Sprintf("%s cpu %s", from, q.String())
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
		from := "node " + n.Name + "'s allocatable"
		if q := n.Status.Allocatable.Memory(); q.Value() > c.memory {
			c.memory, c.memoryFrom = q.Value(), fmt.Sprintf("%s memory %s (the largest node)", from, q.String())
		}
		if q := n.Status.Allocatable.Cpu(); q.MilliValue() > c.milliCPU {
			c.milliCPU, c.cpuFrom = q.MilliValue(), fmt.Sprintf("%s cpu %s (the largest node)", from, q.String())
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
				c.lower(item.Max, fmt.Sprintf("LimitRange %s's %s max", r.Name, strings.ToLower(string(item.Type))))
			}
		}
	}
}

// check refuses spec's memory or CPUs above c through sandbox.CheckHost,
// adding where the figure comes from.
func (c ceiling) check(spec *sandbox.Spec) error {
	// CheckHost counts whole CPUs: rounded up here, so that it refuses
	// only what is above c; the fraction is checked after it.
	h := sandbox.HostCapacity{MemoryBytes: c.memory, CPUs: int((c.milliCPU + 999) / 1000)}
	err := sandbox.CheckHost(spec, h)
	overMemory := c.memory > 0 && spec.Limits.MemoryBytes > c.memory
	overCPU := c.milliCPU > 0 && spec.Limits.CPUs*1000 > float64(c.milliCPU)
	if err == nil && overCPU {
		err = &beyondError{msg: fmt.Sprintf("%s: cpus %g (max_cpus / --cpus) is above %gm; ask for at most %g",
			sandbox.ErrBeyondHost, spec.Limits.CPUs, float64(c.milliCPU), float64(c.milliCPU)/1000)}
	}
	if err == nil {
		return nil
	}
	var from []string
	if overMemory {
		from = append(from, c.memoryFrom)
	}
	if overCPU {
		from = append(from, c.cpuFrom)
	}
	return fmt.Errorf("%w (kubernetes: %s)", err, strings.Join(from, "; "))
}

// beyondError is the refusal sandbox.CheckHost cannot word, a ceiling
// between two whole CPUs; it matches what CheckHost's refusals match.
type beyondError struct{ msg string }

func (e *beyondError) Error() string { return e.msg }
func (e *beyondError) Is(target error) bool {
	return target == sandbox.ErrBeyondHost || target == sandbox.ErrInvalidSpec
}

// capacityCache keeps the ceiling for capacityTTL. An error is not kept.
type capacityCache struct {
	mu     sync.Mutex
	at     time.Time
	c      ceiling
	known  bool
	warned bool // the blind spot was logged
}

// CheckSpec refuses memory or CPUs above what the largest schedulable
// node can give a Pod, or above a LimitRange's max for a container in the
// namespace when that is smaller: such a Pod would wait in Pending until
// the start timeout, or be refused by admission. Run makes the same check
// before any Pod exists. The cluster's answer is kept for a minute.
// Without permission to list nodes (RBAC), only LimitRanges bound it; with
// neither, nothing is checked (logged once).
func (k *Kube) CheckSpec(ctx context.Context, spec sandbox.Spec) error {
	c, err := k.ceiling(ctx)
	if err != nil {
		return err
	}
	return c.check(&spec)
}

func (k *Kube) ceiling(ctx context.Context) (ceiling, error) {
	cc := &k.capacity
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.known && k.now().Sub(cc.at) < capacityTTL {
		return cc.c, nil
	}
	c, err := k.readCeiling(ctx)
	if err != nil {
		return ceiling{}, err
	}
	cc.c, cc.at, cc.known = c, k.now(), true
	return c, nil
}

// readCeiling asks the cluster: nodes, then the namespace's LimitRanges.
// Forbidden is an answer (nothing known from there), other failures are
// errors.
func (k *Kube) readCeiling(ctx context.Context) (ceiling, error) {
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
	if nodesHidden && !k.capacity.warned {
		k.capacity.warned = true
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
