package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

func TestClusterFacts(t *testing.T) {
	t.Run("a cluster that allows a run", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil, WithRuntimeClass("gvisor"))
		var dryRun []string
		var pod *corev1.Pod
		cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			c := a.(k8stesting.CreateActionImpl)
			if len(c.GetCreateOptions().DryRun) == 0 {
				return false, nil, nil // the isolation probe's pods
			}
			dryRun, pod = c.GetCreateOptions().DryRun, c.GetObject().(*corev1.Pod)
			return true, pod, nil // a dry run keeps nothing
		})
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.1.0"}}}
		_, err := cs.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
		require.NoError(t, err)
		f := k.ClusterFacts(t.Context())
		require.Equal(t, "6.1.0", f.NodeKernel)
		require.NoError(t, f.Reach)
		require.NoError(t, f.Create)
		require.NoError(t, f.Delete, "deleting a missing pod answers not found")
		require.Equal(t, []string{metav1.DryRunAll}, dryRun)
		require.Equal(t, "gvisor", *pod.Spec.RuntimeClassName, "the dry run is the pod a run makes")
		require.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
		require.Equal(t, "sbx", f.Namespace)
		require.Equal(t, IsolationLoopback, f.Network.Mechanism, "the isolation proof is made: %v", f.Network.Err)
		requireNoPods(t, cs)
	})
	t.Run("credentials that may not create or delete", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{}, nil)
		forbid := func(verb string) {
			cs.PrependReactor(verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
			})
		}
		forbid("create")
		forbid("delete")
		f := k.ClusterFacts(t.Context())
		require.NoError(t, f.Reach)
		require.True(t, apierrors.IsForbidden(f.Create), "%v", f.Create)
		require.True(t, apierrors.IsForbidden(f.Delete), "%v", f.Delete)
	})
	t.Run("an unreachable namespace", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{}, nil)
		cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
		})
		f := k.ClusterFacts(t.Context())
		require.Error(t, f.Reach)
		require.NoError(t, f.Create, "nothing else is asked")
	})
	t.Run("a missing claim", func(t *testing.T) {
		k, _ := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil, WithClaims(Claim{Name: "skills", Path: t.TempDir()}))
		f := k.ClusterFacts(t.Context())
		require.ErrorContains(t, f.Claims["skills"], `volume claim "skills"`)
	})
}
