package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// fakeInit answers an attach as sandbox-init would: it reads the job and
// writes frames. script decides what, per job.
type fakeInit struct {
	mu       sync.Mutex
	jobs     []frame.Job
	preludes []string                 // of warm Pods
	gone     map[string]chan struct{} // closed when the Pod is deleted
	dead     map[string]bool          // Pods deleted
	cut      int                      // attaches ended by their context while waiting for a job
	script   func(ctx context.Context, job frame.Job, stdout, stderr io.Writer) error
}

// deleted ends the attach to pod, as the container's end does.
func (f *fakeInit) deleted(pod string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead == nil {
		f.dead = map[string]bool{}
	}
	f.dead[pod] = true
	if ch, ok := f.gone[pod]; ok {
		close(ch)
		delete(f.gone, pod)
	}
}

func (f *fakeInit) Attach(ctx context.Context, _, pod, container string, stdin io.Reader, stdout, stderr io.Writer) error {
	if container != containerName {
		return errors.New("unexpected container " + container)
	}
	gone := make(chan struct{})
	f.mu.Lock()
	if f.dead[pod] {
		f.mu.Unlock()
		return errors.New("pod " + pod + " not found")
	}
	if f.gone == nil {
		f.gone = map[string]chan struct{}{}
	}
	f.gone[pod] = gone
	f.mu.Unlock()
	// A warm Pod's attach waits for its job; it ends with ctx or the Pod,
	// like the real one.
	decoded := make(chan error, 1)
	var job frame.Job
	go func() {
		// A warm Pod's prelude comes first, as sandbox-init reads it.
		dec := json.NewDecoder(stdin)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				decoded <- err
				return
			}
			if bytes.HasPrefix(raw, []byte(`{"prestart":`)) {
				f.mu.Lock()
				f.preludes = append(f.preludes, string(raw))
				f.mu.Unlock()
				continue
			}
			decoded <- json.Unmarshal(raw, &job)
			return
		}
	}()
	select {
	case err := <-decoded:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		f.mu.Lock()
		f.cut++
		f.mu.Unlock()
		return ctx.Err()
	case <-gone:
		// Stopped before a job, init still reports.
		return writeReport(stdout, frame.Report{ExitCode: -1})
	}
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	return f.script(ctx, job, stdout, stderr)
}

// reply writes stdout and a report, as init does for a finished script.
func reply(stdout string, rep frame.Report) func(context.Context, frame.Job, io.Writer, io.Writer) error {
	return func(_ context.Context, job frame.Job, w, _ io.Writer) error {
		if isIfacesProbe(job) { // the network probe
			_ = frame.Write(w, frame.Stdout, []byte("lo\n"))
			return writeReport(w, frame.Report{})
		}
		if stdout != "" {
			if err := frame.Write(w, frame.Stdout, []byte(stdout)); err != nil {
				return err
			}
		}
		return writeReport(w, rep)
	}
}

// isIfacesProbe says whether job is the isolation probe's listing of the
// Pod's interfaces.
func isIfacesProbe(job frame.Job) bool { return slices.Equal(job.Argv, ifacesArgv) }

// writeReport writes rep as the result frame; an init of today counts the
// OOM kills, none unless rep says.
func writeReport(w io.Writer, rep frame.Report) error {
	if rep.OOMKills == nil {
		rep.OOMKills = new(int64)
	}
	b, _ := json.Marshal(rep)
	return frame.Write(w, frame.Result, b)
}

// newFake is a runner on a fake clientset whose pods get the container
// status state (running unless changed) as they are created.
func newFake(t *testing.T, init *fakeInit, state func(*corev1.Pod) corev1.ContainerState, opts ...Option) (*Runner, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		st := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		if state != nil {
			st = state(pod)
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, State: st, ImageID: "sha256:abc"}}
		return false, nil, nil // the tracker stores the changed pod
	})
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		init.deleted(a.(k8stesting.DeleteAction).GetName())
		return false, nil, nil
	})
	base := []Option{WithClient(typedCore{cs.CoreV1()}), WithAttacher(init), WithNamespace("sbx"), WithDefaultImage("sandboxrun/runner:test"),
		WithVersion("test"), WithStartTimeout(5 * time.Second), WithBackstopMargin(time.Second)}
	k, err := New(append(base, opts...)...)
	require.NoError(t, err)
	return k, cs
}

func testSpec(t *testing.T) sandbox.Spec {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	s := goldenSpec()
	s.RunID, s.SkillDir, s.Image = "", dir, ""
	s.Limits.Timeout = 2 * time.Second
	return s
}

func requireNoPods(t *testing.T, cs *fake.Clientset) {
	t.Helper()
	// A run with a report has its Pod deleted in the background.
	require.Eventually(t, func() bool {
		list, err := cs.CoreV1().Pods("sbx").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		return len(list.Items) == 0
	}, 5*time.Second, 5*time.Millisecond, "every pod is deleted")
}

func TestRunSuccess(t *testing.T) {
	init := &fakeInit{script: reply(`{"ok": true}`, frame.Report{ExitCode: 0, StdoutBytes: 12, PeakRSSKB: 900})}
	k, cs := newFake(t, init, nil)
	spec := testSpec(t)
	spec.Stdin = []byte(`{"a":1}`)
	res, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, res.Success, "error: %s", res.Error)
	require.JSONEq(t, `{"ok": true}`, string(res.Output))
	require.Equal(t, "sandboxrun/runner:test", res.Image)
	require.Equal(t, "sha256:abc", res.ImageID)
	require.EqualValues(t, 900, res.PeakRSSKB)
	require.Len(t, res.ID, 16, "a run id is generated")
	requireNoPods(t, cs)

	require.Len(t, init.jobs, 2, "the network probe, then the run")
	job := init.jobs[1]
	require.Equal(t, spec.Argv, job.Argv)
	require.Equal(t, []byte(`{"a":1}`), job.Stdin)
	require.Equal(t, int64(2000), job.TimeoutMS)
	require.Contains(t, job.Env, "SANDBOXRUN_RUN_ID="+res.ID)

	// The probe ran once: a second run goes straight to its pod.
	_, err = k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.Len(t, init.jobs, 3)
	var creates int
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			creates++
		}
	}
	require.Equal(t, 3, creates)
}

func TestRunResultConventions(t *testing.T) {
	tests := []struct {
		name  string
		rep   frame.Report
		check func(t *testing.T, res *sandbox.Result)
	}{
		{"exit code", frame.Report{ExitCode: 3}, func(t *testing.T, res *sandbox.Result) {
			require.Equal(t, 3, res.ExitCode)
			require.Contains(t, res.Error, "exit status 3")
		}},
		{"signal", frame.Report{ExitCode: -1, Signal: 11}, func(t *testing.T, res *sandbox.Result) {
			require.Equal(t, -11, res.ExitCode)
			require.Equal(t, "SIGSEGV", res.Signal)
		}},
		{"timeout", frame.Report{ExitCode: -1, Signal: 9, TimedOut: true}, func(t *testing.T, res *sandbox.Result) {
			require.True(t, res.TimedOut)
			require.Equal(t, sandbox.ExitTimeout, res.ExitCode)
		}},
		{"oom counted", frame.Report{ExitCode: -1, Signal: 9, OOMKills: ptr(int64(1))}, func(t *testing.T, res *sandbox.Result) {
			require.True(t, res.OOMKilled)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, cs := newFake(t, &fakeInit{script: reply("", tt.rep)}, nil)
			res, err := k.Run(context.Background(), testSpec(t))
			require.NoError(t, err)
			require.False(t, res.Success)
			tt.check(t, res)
			requireNoPods(t, cs)
		})
	}
}

func TestRunInitDiedWithoutReport(t *testing.T) {
	t.Run("out of memory", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{script: func(_ context.Context, job frame.Job, w, _ io.Writer) error {
			if isIfacesProbe(job) {
				return reply("", frame.Report{})(context.Background(), job, w, nil)
			}
			return nil // the stream ends: init was killed
		}}, func(p *corev1.Pod) corev1.ContainerState {
			if p.Labels[sandbox.LabelSkill] == "netprobe" {
				return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			}
			return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
		})
		res, err := k.Run(context.Background(), testSpec(t))
		require.NoError(t, err)
		require.True(t, res.OOMKilled)
		require.Equal(t, "SIGKILL", res.Signal)
		requireNoPods(t, cs)
	})
	t.Run("crash", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{script: func(_ context.Context, job frame.Job, w, e io.Writer) error {
			if isIfacesProbe(job) {
				return reply("", frame.Report{})(context.Background(), job, w, nil)
			}
			_, _ = e.Write([]byte("panic: boom\n"))
			return nil
		}}, func(p *corev1.Pod) corev1.ContainerState {
			if p.Labels[sandbox.LabelSkill] == "netprobe" {
				return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			}
			return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}
		})
		res, err := k.Run(context.Background(), testSpec(t))
		require.ErrorIs(t, err, sandbox.ErrNoReport)
		require.Contains(t, err.Error(), "panic: boom")
		require.NotNil(t, res)
		require.Contains(t, res.Error, "status 2")
		requireNoPods(t, cs)
	})
}

// An attach that broke before the frames arrived: the output comes from
// the pod's log once the container ended.
func TestRunLogFallback(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: func(_ context.Context, job frame.Job, w, _ io.Writer) error {
		if isIfacesProbe(job) {
			return reply("", frame.Report{})(context.Background(), job, w, nil)
		}
		return errors.New("stream reset")
	}}, func(p *corev1.Pod) corev1.ContainerState {
		if p.Labels[sandbox.LabelSkill] == "netprobe" {
			return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	})
	var logged bytes.Buffer
	require.NoError(t, frame.Write(&logged, frame.Stdout, []byte(`{"from": "log"}`)))
	require.NoError(t, writeReport(&logged, frame.Report{ExitCode: 0, StdoutBytes: 15}))
	k.logSource = func(context.Context, string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(logged.Bytes())), nil
	}
	res, err := k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.Success, "error: %s", res.Error)
	require.JSONEq(t, `{"from": "log"}`, string(res.Output))
	requireNoPods(t, cs)

	// A log that holds no report is no rescue: the run says init did not
	// report.
	k.logSource = func(context.Context, string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader([]byte("not frames"))), nil
	}
	_, err = k.Run(context.Background(), testSpec(t))
	require.ErrorIs(t, err, sandbox.ErrNoReport)
	require.ErrorContains(t, err, "stream reset")
}

func TestRunCancelledDeletesThePod(t *testing.T) {
	started := make(chan struct{})
	k, cs := newFake(t, &fakeInit{script: func(ctx context.Context, job frame.Job, w, _ io.Writer) error {
		if isIfacesProbe(job) {
			return reply("", frame.Report{})(ctx, job, w, nil)
		}
		close(started)
		<-ctx.Done() // a script that never ends; the attach ends with the pod
		return ctx.Err()
	}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := k.Run(ctx, testSpec(t))
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	require.Equal(t, -9, res.ExitCode)
	require.Contains(t, res.Error, "cancelled")
	requireNoPods(t, cs)
}

func TestRunBackstop(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: func(ctx context.Context, job frame.Job, w, _ io.Writer) error {
		if isIfacesProbe(job) {
			return reply("", frame.Report{})(ctx, job, w, nil)
		}
		<-ctx.Done() // init never reports
		return ctx.Err()
	}}, nil)
	spec := testSpec(t)
	spec.Limits.Timeout = 100 * time.Millisecond
	res, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, sandbox.ExitTimeout, res.ExitCode)
	requireNoPods(t, cs)
}

func TestNetworkProbeFailsClosed(t *testing.T) {
	init := &fakeInit{script: func(_ context.Context, job frame.Job, w, _ io.Writer) error {
		_ = frame.Write(w, frame.Stdout, []byte("eth0\nlo\n"))
		return writeReport(w, frame.Report{})
	}}
	k, cs := newFake(t, init, nil)
	for range 2 {
		res, err := k.Run(context.Background(), testSpec(t))
		require.ErrorIs(t, err, ErrNetworkNotIsolated)
		require.Contains(t, err.Error(), "[eth0 lo]")
		require.Nil(t, res)
	}
	require.Len(t, init.jobs, 1, "a failed proof is remembered, not probed by every run")
	requireNoPods(t, cs)

	// A run that has the network does not need the proof.
	spec := testSpec(t)
	spec.Limits.Network = true
	res, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, "eth0\nlo\n", res.Stdout)
}

func TestRunRefusals(t *testing.T) {
	t.Run("writable workspace", func(t *testing.T) {
		init := &fakeInit{script: reply("", frame.Report{})}
		k, cs := newFake(t, init, nil)
		spec := testSpec(t)
		spec.Workspace, spec.WorkspaceWritable = t.TempDir(), true
		res, err := k.Run(context.Background(), spec)
		require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
		require.Nil(t, res)
		require.Empty(t, cs.Actions(), "refused before any API call")
	})
	t.Run("image not on the node", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, func(*corev1.Pod) corev1.ContainerState {
			return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "never pull"}}
		})
		spec := testSpec(t)
		spec.Limits.Network = true
		_, err := k.Run(context.Background(), spec)
		require.ErrorIs(t, err, sandbox.ErrImageNotFound)
		requireNoPods(t, cs)
	})
	t.Run("pod refused by the server", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil)
		cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New("quota exceeded"))
		})
		spec := testSpec(t)
		spec.Limits.Network = true
		res, err := k.Run(context.Background(), spec)
		require.Error(t, err)
		require.Contains(t, err.Error(), "quota exceeded")
		require.Equal(t, -1, res.ExitCode)
	})
}

func TestReap(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil)
	host := k.ownerHost
	mk := func(name string, lbl map[string]string, age time.Duration) {
		l := map[string]string{sandbox.LabelManaged: "true"}
		for k, v := range lbl {
			l[k] = v
		}
		_, err := cs.CoreV1().Pods("sbx").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: l, CreationTimestamp: metav1.NewTime(time.Now().Add(-age)),
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	self := strconv.Itoa(os.Getpid())
	mk("live", map[string]string{sandbox.LabelOwnerPID: self, sandbox.LabelOwnerHost: host}, time.Hour)
	mk("dead", map[string]string{sandbox.LabelOwnerPID: "999999999", sandbox.LabelOwnerHost: host}, time.Second)
	mk("elsewhere", map[string]string{sandbox.LabelOwnerPID: "1", sandbox.LabelOwnerHost: "other"}, time.Hour)

	got, err := k.Reap(context.Background(), sandbox.ReapOptions{OnlyDeadOwners: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "dead", got[0].Name)
	require.True(t, got[0].Removed)

	got, err = k.Reap(context.Background(), sandbox.ReapOptions{Grace: 30 * time.Minute, DryRun: true})
	require.NoError(t, err)
	require.Len(t, got, 2, "by age: the live owner's and the other host's")
	for _, r := range got {
		require.False(t, r.Removed)
	}
}

// lateCreate is an API server that finishes a Pod's create after the
// client stopped waiting for it: the caller leaves during the create.
type lateCreate struct {
	Client
	leave  context.CancelFunc
	landed sync.WaitGroup
}

func (l *lateCreate) Pods(ns string) Pods { return latePods{Pods: l.Client.Pods(ns), l: l} }

type latePods struct {
	Pods
	l *lateCreate
}

func (p latePods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	p.l.leave()
	if ctx.Err() != nil {
		// The client gives up at once; the server still makes the Pod.
		p.l.landed.Go(func() {
			time.Sleep(50 * time.Millisecond)
			_, _ = p.Pods.Create(context.Background(), pod, opts)
		})
		return nil, ctx.Err()
	}
	return p.Pods.Create(ctx, pod, opts)
}

// A create whose caller left is waited for, so the Pod it made is deleted.
func TestRunCancelledDuringCreate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	init := &fakeInit{script: reply("", frame.Report{})}
	_, cs := newFake(t, init, nil)
	late := &lateCreate{Client: typedCore{cs.CoreV1()}, leave: cancel}
	k, err := New(WithClient(late), WithAttacher(init), WithNamespace("sbx"), WithDefaultImage("sandboxrun/runner:test"),
		WithVersion("test"), WithStartTimeout(5*time.Second))
	require.NoError(t, err)
	spec := testSpec(t)
	spec.Limits.Network = true // no probe Pod
	_, err = k.Run(ctx, spec)
	require.ErrorIs(t, err, context.Canceled)
	late.landed.Wait()
	requireNoPods(t, cs)
	require.Empty(t, init.jobs, "nothing ran")
}

// A Pod that does not start ends the run with the start timeout's error,
// unless the caller's own deadline came first: then the run ends with it.
func TestRunEndsBeforeThePodStarts(t *testing.T) {
	creating := func(*corev1.Pod) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
	for _, tt := range []struct {
		name         string
		startTimeout time.Duration
		deadline     time.Duration
		want         error
	}{
		{"the caller's deadline", 5 * time.Second, 200 * time.Millisecond, context.DeadlineExceeded},
		{"the start timeout", 200 * time.Millisecond, 5 * time.Second, ErrPodStart},
	} {
		t.Run(tt.name, func(t *testing.T) {
			init := &fakeInit{script: reply("", frame.Report{})}
			k, cs := newFake(t, init, creating, WithStartTimeout(tt.startTimeout))
			ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
			defer cancel()
			spec := testSpec(t)
			spec.Limits.Network = true
			_, err := k.Run(ctx, spec)
			require.ErrorIs(t, err, tt.want)
			for _, other := range []error{context.DeadlineExceeded, ErrPodStart} {
				if !errors.Is(other, tt.want) {
					require.NotErrorIs(t, err, other)
				}
			}
			require.ErrorContains(t, err, "ContainerCreating", "what the kubelet last said")
			requireNoPods(t, cs)
		})
	}
}

func ptr[T any](v T) *T { return &v }
