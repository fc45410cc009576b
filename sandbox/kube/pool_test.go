package kube

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// newWarm is a fake runner with a warm pool of size.
func newWarm(t *testing.T, size int, maxIdle time.Duration) (*Runner, *fake.Clientset, *fakeInit) {
	t.Helper()
	init := &fakeInit{script: reply(`{"ok": true}`, frame.Report{})}
	k, cs := newFake(t, init, nil, WithWarmPool(size, maxIdle))
	t.Cleanup(func() { _ = k.Close() })
	return k, cs, init
}

// idle is the number of warm Pods waiting.
func idle(k *Runner) int {
	return k.eng.Pool().Snapshot().IdleCount()
}

func requireIdle(t *testing.T, k *Runner, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return idle(k) == n && k.PoolStats().Ready == n },
		5*time.Second, 5*time.Millisecond, "%d warm pods idle", n)
}

// livePods are the Pods not deleted, by name.
func livePods(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	list, err := cs.CoreV1().Pods("sbx").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func patches(cs *fake.Clientset) []k8stesting.PatchAction {
	var out []k8stesting.PatchAction
	for _, a := range cs.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, p)
		}
	}
	return out
}

func TestWarmPodServesOneRunThenIsReplaced(t *testing.T) {
	k, cs, init := newWarm(t, 1, time.Minute)
	spec := testSpec(t)

	first, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, first.Success, first.Error)
	require.Equal(t, sandbox.PoolStats{Size: 1, Ready: 1, Hits: 0, Misses: 1}, k.PoolStats(), "a cold run, then a refill")
	requireIdle(t, k, 1)
	warm := livePods(t, cs)
	require.Len(t, warm, 1)
	require.True(t, strings.HasPrefix(warm[0], podNamePrefix+warmRunIDPrefix), warm[0])

	spec.RunID = "caller-named-run"
	spec.Argv = []string{"python3", "-c", "print('another command, same pod')"}
	res, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.Equal(t, "caller-named-run", res.ID)
	require.Equal(t, "sha256:abc", res.ImageID)
	require.EqualValues(t, 1, k.PoolStats().Hits)

	// The job that ran in the warm Pod is this run's, and the Pod was
	// claimed for it: its run id in the labels, the deadline a cold Pod
	// of this run gets (the warm one was longer by maxIdle).
	job := init.jobs[len(init.jobs)-1]
	require.Equal(t, spec.Argv, job.Argv)
	require.Contains(t, job.Env, "SANDBOXRUN_RUN_ID=caller-named-run")
	// The warm Pod was asked to start the run's interpreter ahead, with
	// the skill's environment and nothing of a request.
	init.mu.Lock()
	require.Len(t, init.preludes, 1)
	var pre frame.Prelude
	require.NoError(t, json.Unmarshal([]byte(init.preludes[0]), &pre))
	init.mu.Unlock()
	require.Equal(t, "python3", pre.Prestart.Argv0)
	require.Equal(t, []string{sandbox.EnvRunID}, pre.Prestart.Vary)
	require.NotContains(t, init.preludes[0], "another command")
	ps := patches(cs)
	require.Len(t, ps, 1)
	require.Equal(t, warm[0], ps[0].GetName())
	var patch struct {
		Metadata metav1.ObjectMeta
		Spec     corev1.PodSpec
	}
	require.NoError(t, json.Unmarshal(ps[0].GetPatch(), &patch))
	require.Equal(t, "caller-named-run", patch.Metadata.Labels[sandbox.LabelRunID])
	require.Equal(t, "caller-named-run", patch.Metadata.Annotations[sandbox.LabelRunID])
	cold := int64(k.podParams(&spec).deadline.Seconds())
	require.GreaterOrEqual(t, *patch.Spec.ActiveDeadlineSeconds, cold)
	require.Less(t, *patch.Spec.ActiveDeadlineSeconds, cold+60, "cut back from cold + maxIdle")

	// Used once: deleted, and a new one waits in its place.
	requireIdle(t, k, 1)
	now := livePods(t, cs)
	require.Len(t, now, 1)
	require.NotEqual(t, warm[0], now[0])
}

// The warm Pod is the cold one but for its name, run id, creation time and
// a deadline longer by maxIdle: same image, mounts, limits, security and
// owner labels.
func TestWarmPodIsTheColdPod(t *testing.T) {
	k, _, _ := newWarm(t, 1, 90*time.Second)
	spec := testSpec(t)
	spec.Workspace = t.TempDir()
	spec.RunID = "r1"
	cold := podFor(&spec, k.podParams(&spec))
	warm := k.warmPodFor(&spec, "warm-0123", 90*time.Second)

	require.Equal(t, *cold.Spec.ActiveDeadlineSeconds+90, *warm.Spec.ActiveDeadlineSeconds)
	require.Equal(t, "sandboxrun-warm-0123", warm.Name)
	require.Equal(t, "warm-0123", warm.Labels[sandbox.LabelRunID])
	for _, p := range []*corev1.Pod{cold, warm} {
		p.Name, p.Spec.ActiveDeadlineSeconds = "", nil
		p.Labels[sandbox.LabelRunID], p.Annotations[sandbox.LabelRunID], p.Annotations[sandbox.LabelCreated] = "", "", ""
	}
	require.Equal(t, cold, warm)
}

// Only a run whose Pod would be the warm Pod gets it: anything that
// changes the Pod's spec is a miss; the command, input and variables,
// which travel in the job, are not.
func TestWarmPoolKeyedByThePod(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, s *sandbox.Spec)
		hit    bool
	}{
		{"same", func(*testing.T, *sandbox.Spec) {}, true},
		{"other command, input and variables", func(_ *testing.T, s *sandbox.Spec) {
			s.Argv, s.Stdin, s.Env = []string{"bash", "-c", "true"}, []byte(`{"x":1}`), map[string]string{"A": "b"}
		}, true},
		{"memory", func(_ *testing.T, s *sandbox.Spec) { s.Limits.MemoryBytes *= 2 }, false},
		{"cpus", func(_ *testing.T, s *sandbox.Spec) { s.Limits.CPUs = 0.5 }, false},
		{"timeout", func(_ *testing.T, s *sandbox.Spec) { s.Limits.Timeout = 3 * time.Second }, false},
		{"tmp size", func(_ *testing.T, s *sandbox.Spec) { s.Limits.TmpBytes = 1 << 20 }, false},
		{"output cap", func(_ *testing.T, s *sandbox.Spec) { s.Limits.OutputBytes = 1 << 10 }, false},
		{"skill folder", func(t *testing.T, s *sandbox.Spec) { s.SkillDir = testSpec(t).SkillDir }, false},
		{"skill name", func(_ *testing.T, s *sandbox.Spec) { s.Skill = "other" }, false},
		{"workspace", func(t *testing.T, s *sandbox.Spec) { s.Workspace = t.TempDir() }, false},
		{"image", func(_ *testing.T, s *sandbox.Spec) { s.Image = "sandboxrun/runner:other" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, cs, init := newWarm(t, 1, time.Minute)
			spec := testSpec(t)
			_, err := k.Run(context.Background(), spec)
			require.NoError(t, err)
			requireIdle(t, k, 1)
			warm := livePods(t, cs)[0]

			other := spec
			other.RunID = ""
			tt.change(t, &other)
			res, err := k.Run(context.Background(), other)
			require.NoError(t, err)
			require.True(t, res.Success, res.Error)
			if tt.hit {
				require.Equal(t, sandbox.PoolStats{Size: 1, Ready: 1, Hits: 1, Misses: 1}, k.PoolStats())
				require.Eventually(t, func() bool { return !slices.Contains(livePods(t, cs), warm) }, 5*time.Second, 5*time.Millisecond, "used and deleted")
				return
			}
			require.EqualValues(t, 0, k.PoolStats().Hits)
			require.Contains(t, livePods(t, cs), warm, "the other configuration's pod still waits")
			require.Empty(t, patches(cs))
			require.Equal(t, other.Argv, init.jobs[len(init.jobs)-1].Argv)
		})
	}
}

// The pool holds at most its size, whatever the configurations, and Close
// deletes every Pod it holds.
func TestWarmPoolBoundedAndDrainedOnClose(t *testing.T) {
	k, cs, init := newWarm(t, 2, time.Minute)
	for i := range 4 {
		spec := testSpec(t) // a skill folder of its own: another configuration
		spec.Limits.MemoryBytes += int64(i) << 20
		_, err := k.Run(context.Background(), spec)
		require.NoError(t, err)
		require.LessOrEqual(t, k.PoolStats().Ready, 2)
	}
	requireIdle(t, k, 2)
	require.Len(t, livePods(t, cs), 2)
	require.Equal(t, sandbox.PoolStats{Size: 2, Ready: 2, Hits: 0, Misses: 4}, k.PoolStats())

	require.NoError(t, k.Close())
	requireNoPods(t, cs)
	require.Zero(t, k.PoolStats().Ready)
	init.mu.Lock()
	require.Zero(t, init.cut, "the attaches ended with their pods, not cut short")
	init.mu.Unlock()
	// A closed pool hands out nothing and starts nothing.
	_, err := k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	requireNoPods(t, cs)
}

// A warm Pod that went away while it waited (deleted from outside,
// evicted, reaped) is not used: the run starts a Pod of its own.
func TestWarmPodGoneIsNotUsed(t *testing.T) {
	k, cs, _ := newWarm(t, 1, time.Minute)
	spec := testSpec(t)
	_, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	requireIdle(t, k, 1)
	warm := livePods(t, cs)[0]
	require.NoError(t, cs.CoreV1().Pods("sbx").Delete(context.Background(), warm, metav1.DeleteOptions{}))

	spec.RunID = ""
	res, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	// The run took it (a hit), found it gone when it claimed it, and was
	// tried once more (engine.ErrRetry) on the Pod the pool started
	// meanwhile.
	require.Equal(t, sandbox.PoolStats{Size: 1, Ready: 1, Hits: 2, Misses: 1}, k.PoolStats())
	require.NotContains(t, livePods(t, cs), warm)
	requireIdle(t, k, 1)
}

// Idle Pods are deleted after maxIdle.
func TestWarmPodExpires(t *testing.T) {
	k, cs, _ := newWarm(t, 1, time.Second)
	_, err := k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	requireIdle(t, k, 1)
	require.Eventually(t, func() bool { return len(livePods(t, cs)) == 0 }, 5*time.Second, 10*time.Millisecond)
	require.Zero(t, k.PoolStats().Ready)
}

// A run that finds no idle Pod but one starting for its configuration
// waits for that one rather than create another.
func TestRunWaitsForAWarmPodStarting(t *testing.T) {
	k, cs, _ := newWarm(t, 1, time.Minute)
	gate := make(chan struct{})
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if strings.HasPrefix(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name, podNamePrefix+warmRunIDPrefix) {
			<-gate
		}
		return false, nil, nil
	})
	spec := testSpec(t)
	_, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, 1, k.PoolStats().Ready, "starting")

	done := make(chan *sandbox.Result)
	go func() {
		s := spec
		s.RunID = ""
		res, err := k.Run(context.Background(), s)
		require.NoError(t, err)
		done <- res
	}()
	require.Eventually(t, func() bool {
		return k.eng.Pool().Snapshot().Waiting == 1
	}, 5*time.Second, 5*time.Millisecond)
	close(gate)
	res := <-done
	require.True(t, res.Success, res.Error)
	require.EqualValues(t, 1, k.PoolStats().Hits)
	requireIdle(t, k, 1)
	var creates int
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			creates++
		}
	}
	require.Equal(t, 4, creates, "probe, cold run, the warm pod it waited for, its replacement")
}

func TestWarmPoolOptions(t *testing.T) {
	for _, o := range []Option{WithWarmPool(-1, time.Minute), WithWarmPool(2, 0)} {
		_, err := New(WithClient(typedCore{fake.NewClientset().CoreV1()}), WithAttacher(&fakeInit{}), WithVersion("t"), o)
		require.ErrorContains(t, err, "warm pool")
	}
	k, err := New(WithClient(typedCore{fake.NewClientset().CoreV1()}), WithAttacher(&fakeInit{}), WithVersion("t"), WithWarmPool(0, 0))
	require.NoError(t, err)
	require.Equal(t, sandbox.PoolStats{}, k.PoolStats(), "off")
	require.NoError(t, k.Close())
}

// A runner closed right after its run (the CLI's) creates no warm Pod only
// to delete it.
func TestCloseRightAfterARunCreatesNoWarmPod(t *testing.T) {
	k, cs, _ := newWarm(t, 2, time.Minute)
	_, err := k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.NoError(t, k.Close())
	for _, a := range cs.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			require.False(t, strings.HasPrefix(c.GetObject().(*corev1.Pod).Name, podNamePrefix+warmRunIDPrefix))
		}
	}
	require.Equal(t, sandbox.PoolStats{Size: 2, Ready: 0, Hits: 0, Misses: 1}, k.PoolStats())
}

// The pool sized by demand (sandbox/warm) keeps one Pod for the next run
// of a configuration just run, and the Close deletes it.
func TestWarmPodsByDemand(t *testing.T) {
	init := &fakeInit{script: reply(`{"ok": true}`, frame.Report{})}
	k, cs := newFake(t, init, nil, WithWarmPoolByDemand(4, time.Minute))
	spec := testSpec(t)
	_, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	requireIdle(t, k, 1)
	_, err = k.Run(context.Background(), spec)
	require.NoError(t, err)
	st := k.PoolStats()
	require.Equal(t, 4, st.Size)
	require.Equal(t, [2]uint64{1, 1}, [2]uint64{st.Hits, st.Misses}, "cold, then warm")
	require.NoError(t, k.Close())
	require.Empty(t, livePods(t, cs))
}

// A run with a writable workspace takes a warm Pod like any other: the
// workspace is an emptyDir of its size whichever folder fills it, and the
// files travel over the side channel of the run that takes the Pod.
func TestWarmPoolTakesSessionRuns(t *testing.T) {
	k, cs, init := newWarm(t, 1, time.Minute)
	session := func(t *testing.T) sandbox.Spec {
		spec := testSpec(t)
		spec.Workspace, spec.WorkspaceWritable, spec.Changes = t.TempDir(), true, &recordingApplier{}
		spec.Limits.WorkspaceWriteBytes = 16 << 20
		return spec
	}
	first := session(t)
	res, err := k.Run(context.Background(), first)
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	requireIdle(t, k, 1)
	warm := livePods(t, cs)[0]
	pod, err := cs.CoreV1().Pods("sbx").Get(context.Background(), warm, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, string(must(json.Marshal(pod))), first.Workspace, "the warm Pod names no workspace folder")

	// Another session (another folder) of the same skill, with the same
	// write cap.
	second := session(t)
	second.SkillDir = first.SkillDir
	res, err = k.Run(context.Background(), second)
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.Equal(t, sandbox.PoolStats{Size: 1, Ready: 1, Hits: 1, Misses: 1}, k.PoolStats())
	require.Eventually(t, func() bool { return !slices.Contains(livePods(t, cs), warm) }, 5*time.Second, 5*time.Millisecond, "used and deleted")
	job := init.jobs[len(init.jobs)-1]
	require.True(t, job.Channel, "the workspace goes over the run's side channel")
	require.Equal(t, &frame.Workspace{Dir: sandbox.WorkspaceDir}, job.Workspace)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
