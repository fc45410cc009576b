package kube

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func node(name, cpu, memory string, unschedulable bool) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Unschedulable: unschedulable},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
		}},
	}
}

func limitRange(name string, typ corev1.LimitType, max corev1.ResourceList) *corev1.LimitRange {
	return &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sbx"},
		Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: typ, Max: max}}},
	}
}

func forbid(cs *fake.Clientset, resource string) {
	cs.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource(resource), "", errors.New("RBAC: access denied"))
	})
}

func listCount(cs *fake.Clientset, resource string) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// CheckSpec refuses what no node could hold, or what a LimitRange of the
// namespace refuses, in the engine's words (sandbox.CheckHost).
func TestCheckSpecAgainstTheCluster(t *testing.T) {
	twoNodes := []runtime.Object{node("small", "2", "4Gi", false), node("big", "1900m", "8Gi", false)}
	tests := []struct {
		name    string
		objects []runtime.Object
		hide    []string // resources the runner may not list
		cpus    float64
		memory  int64
		refused string // in the error; empty: allowed
	}{
		{name: "fits", objects: twoNodes, cpus: 2, memory: 8 << 30},
		{name: "memory above every node", objects: twoNodes, cpus: 1, memory: 9 << 30,
			refused: "memory 9GiB (max_memory / --memory) is above the engine host's 8GiB"},
		{name: "cpus above every node", objects: twoNodes, cpus: 3, memory: 1 << 30,
			refused: "cpus 3 (max_cpus / --cpus) is above the engine host's 2 CPUs"},
		{name: "a cordoned node does not count", objects: append([]runtime.Object{node("cordoned", "64", "256Gi", true)}, twoNodes...),
			cpus: 1, memory: 9 << 30, refused: "above the engine host's 8GiB"},
		{name: "fraction of a cpu", objects: []runtime.Object{node("n", "1900m", "4Gi", false)}, cpus: 1.9, memory: 1 << 30},
		{name: "above a fraction of a cpu", objects: []runtime.Object{node("n", "1900m", "4Gi", false)}, cpus: 1.95, memory: 1 << 30,
			refused: "cpus 1.95 (max_cpus / --cpus) is above the engine host's 1.9 CPUs; ask for at most 1.9"},
		{name: "limit range below the nodes", objects: append([]runtime.Object{limitRange("caps", corev1.LimitTypeContainer,
			corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")})}, twoNodes...),
			cpus: 1, memory: 2 << 30, refused: "memory 2GiB (max_memory / --memory) is above the engine host's 1GiB"},
		{name: "limit range of half a cpu", objects: append([]runtime.Object{limitRange("caps", corev1.LimitTypePod,
			corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")})}, twoNodes...),
			cpus: 1, memory: 1 << 30, refused: "above the engine host's 0.5 CPUs; ask for at most 0.5"},
		{name: "limit range above the nodes", objects: append([]runtime.Object{limitRange("caps", corev1.LimitTypeContainer,
			corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")})}, twoNodes...),
			cpus: 1, memory: 9 << 30, refused: "above the engine host's 8GiB"},
		{name: "nodes hidden: the limit range alone", hide: []string{"nodes"}, objects: append([]runtime.Object{limitRange("caps", corev1.LimitTypeContainer,
			corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")})}, twoNodes...),
			cpus: 64, memory: 2 << 30, refused: "memory 2GiB (max_memory / --memory) is above the engine host's 1GiB"},
		{name: "nodes hidden, no limit range", hide: []string{"nodes"}, objects: twoNodes, cpus: 64, memory: 1 << 50},
		{name: "nothing readable", hide: []string{"nodes", "limitranges"}, objects: twoNodes, cpus: 64, memory: 1 << 50},
		{name: "no nodes", cpus: 64, memory: 1 << 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged bytes.Buffer
			k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil,
				WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
			for _, o := range tt.objects {
				require.NoError(t, cs.Tracker().Add(o))
			}
			for _, r := range tt.hide {
				forbid(cs, r)
			}
			spec := testSpec(t)
			spec.Limits.CPUs, spec.Limits.MemoryBytes = tt.cpus, tt.memory
			for range 2 {
				err := k.CheckSpec(context.Background(), spec)
				if tt.refused == "" {
					require.NoError(t, err)
					continue
				}
				require.ErrorIs(t, err, sandbox.ErrBeyondHost)
				require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
				require.ErrorContains(t, err, tt.refused)
			}
			require.Equal(t, 1, listCount(cs, "limitranges"), "the answer is kept")
			if len(tt.hide) > 0 {
				require.Equal(t, 1, strings.Count(logged.String(), "cannot list nodes"), "the blind spot is logged once: %s", logged.String())
			} else {
				require.NotContains(t, logged.String(), "cannot list nodes")
			}
		})
	}
}

// The cluster is asked again once its answer is a minute old; a failure
// to ask is the check's error and is not kept.
func TestCheckSpecAsksAgain(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil)
	now := time.Now()
	k.now = func() time.Time { return now }
	require.NoError(t, cs.Tracker().Add(node("n", "2", "4Gi", false)))
	spec := testSpec(t)
	require.NoError(t, k.CheckSpec(context.Background(), spec))
	now = now.Add(capacityTTL - time.Second)
	require.NoError(t, k.CheckSpec(context.Background(), spec))
	require.Equal(t, 1, listCount(cs, "nodes"))

	// A node twice the size joined: a minute later, a run may use it.
	require.NoError(t, cs.Tracker().Add(node("m", "4", "8Gi", false)))
	spec.Limits.MemoryBytes = 6 << 30
	require.ErrorIs(t, k.CheckSpec(context.Background(), spec), sandbox.ErrBeyondHost)
	now = now.Add(2 * time.Second)
	require.NoError(t, k.CheckSpec(context.Background(), spec))
	require.Equal(t, 2, listCount(cs, "nodes"))

	now = now.Add(capacityTTL)
	cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	require.ErrorIs(t, k.CheckSpec(context.Background(), spec), ErrUnavailable)
	require.ErrorIs(t, k.CheckSpec(context.Background(), spec), ErrUnavailable, "a failure is not kept")
	require.Equal(t, 4, listCount(cs, "nodes"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, k.CheckSpec(ctx, spec), context.Canceled, "a caller that left is told so, not that the server is down")
}

// Run refuses what CheckSpec refuses before any Pod exists, the network
// probe's included.
func TestRunBeyondTheCluster(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil)
	require.NoError(t, cs.Tracker().Add(node("n", "2", "4Gi", false)))
	for name, edit := range map[string]func(*sandbox.Spec){
		"memory": func(s *sandbox.Spec) { s.Limits.MemoryBytes = 1 << 50 },
		"cpus":   func(s *sandbox.Spec) { s.Limits.CPUs = 4096 },
	} {
		t.Run(name, func(t *testing.T) {
			spec := testSpec(t)
			edit(&spec)
			res, err := k.Run(context.Background(), spec)
			require.ErrorIs(t, err, sandbox.ErrBeyondHost)
			require.Nil(t, res)
			for _, a := range cs.Actions() {
				require.NotEqual(t, "create", a.GetVerb(), "no pod was created: %v", a)
			}
		})
	}
	res, err := k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
}
