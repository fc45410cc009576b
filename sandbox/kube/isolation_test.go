package kube

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
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

// cluster answers the isolation probes as a cluster would: the interfaces
// a Pod sees, and which targets open from a sandbox-like Pod (deny) and
// from the control Pod. Each answer may be changed between probes.
type cluster struct {
	mu      sync.Mutex
	ifaces  string
	denyOK  map[string]bool // targets a sandbox-like Pod reaches
	ctrlNo  map[string]bool // targets the control Pod does not reach
	hold    chan struct{}   // when set, a probe waits for it to close
	probes  map[string]int  // jobs by kind: ls, deny, control
	modeErr bool            // the connect script fails
}

func (c *cluster) script(ctx context.Context, job frame.Job, w, _ io.Writer) error {
	c.mu.Lock()
	hold := c.hold
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probes == nil {
		c.probes = map[string]int{}
	}
	if isIfacesProbe(job) {
		c.probes["ls"]++
		_ = frame.Write(w, frame.Stdout, []byte(c.ifaces))
		return writeReport(w, frame.Report{})
	}
	if len(job.Argv) < 6 || job.Argv[1] != "-c" || job.Argv[2] != connScript {
		return writeReport(w, frame.Report{}) // a run
	}
	mode := job.Argv[3]
	c.probes[mode]++
	if c.modeErr {
		_ = frame.Write(w, frame.Stderr, []byte("Traceback: boom"))
		return writeReport(w, frame.Report{ExitCode: 1})
	}
	var out strings.Builder
	args := job.Argv[6:]
	for i := 0; i < len(args); i += 2 {
		name := args[i] + ":" + args[i+1]
		if strings.Contains(args[i], ":") {
			name = "[" + args[i] + "]:" + args[i+1]
		}
		open := c.ctrlNo[name] == false
		if mode == "deny" {
			open = c.denyOK[name]
		}
		if open {
			fmt.Fprintf(&out, "open %s\n", name)
		} else {
			fmt.Fprintf(&out, "closed %s TimeoutError: timed out\n", name)
		}
	}
	_ = frame.Write(w, frame.Stdout, []byte(out.String()))
	return writeReport(w, frame.Report{})
}

func (c *cluster) count(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.probes[kind]
}

// newCluster is a runner on a fake cluster with a kube-dns Service and the
// API server's, and the labels of the probe Pods it created (by run id
// prefix).
func newCluster(t *testing.T, c *cluster, opts ...Option) (*Runner, *fake.Clientset, func() map[string]string) {
	t.Helper()
	init := &fakeInit{script: c.script}
	k, cs := newFake(t, init, nil, opts...)
	_, err := cs.CoreV1().Services("kube-system").Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Services("default").Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var mu sync.Mutex
	managed := map[string]string{}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		rest, probe := strings.CutPrefix(pod.Annotations[sandbox.LabelRunID], "netprobe-")
		if !probe {
			return false, nil, nil
		}
		kind, _, _ := strings.Cut(rest, "-")
		mu.Lock()
		managed[kind] = pod.Labels[sandbox.LabelManaged]
		mu.Unlock()
		return false, nil, nil
	})
	k.resolve = func(_ context.Context, host string) ([]string, error) {
		if host == "sandboxrun-0.sandboxrun-headless.sbx.svc" {
			return []string{"10.244.0.7"}, nil
		}
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	return k, cs, func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return managed
	}
}

// With eth0, isolation is proven by the deny-all policy at work: no target
// opens from a Pod labelled like a sandbox Pod, all from the control Pod,
// which lacks the label the policy selects.
func TestIsolationByEnforcedPolicy(t *testing.T) {
	c := &cluster{ifaces: "eth0\nlo\n"}
	k, cs, managed := newCluster(t, c, WithIsolationTargets("sandboxrun-0.sandboxrun-headless.sbx.svc:8080", "[fd00::1]:80"))
	require.Equal(t, "not proven yet: the first run without network probes", k.Isolation().String())

	res, err := k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.Success)
	iso := k.Isolation()
	require.Equal(t, IsolationPolicy, iso.Mechanism)
	require.Equal(t, []string{"10.244.0.7:8080", "10.96.0.10:53", "10.96.0.1:443", "[fd00::1]:80"}, iso.Targets,
		"the operator's, the cluster DNS and the API server")
	require.Equal(t, []string{"eth0", "lo"}, iso.Interfaces)
	require.Equal(t, 5*time.Minute, iso.ValidUntil.Sub(iso.ProvenAt))
	require.Contains(t, iso.String(), "an enforced deny-all NetworkPolicy")
	require.Equal(t, map[string]string{"ifaces": "true", "deny": "true", "control": controlManaged}, managed(),
		"the control pod alone lacks the label the policy selects")
	require.Equal(t, 1, c.count("deny"))
	require.Equal(t, 1, c.count("control"))
	requireNoPods(t, cs)
}

// Each way the connect probe fails refuses runs without network, and says
// what it saw and what to do.
func TestIsolationProbeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     *cluster
		opts  []Option
		nodns bool
		want  []string
	}{
		{name: "policy not enforced", c: &cluster{ifaces: "eth0\nlo\n", denyOK: map[string]bool{"10.96.0.10:53": true, "10.96.0.1:443": true}},
			want: []string{"reached 10.96.0.10:53, 10.96.0.1:443 (the control pod reached 10.96.0.10:53, 10.96.0.1:443)", "no deny-all NetworkPolicy selecting io.sandboxrun.managed=true is enforced in namespace sbx", "CNI does not enforce"}},
		{name: "policy enforced, not for the API server", c: &cluster{ifaces: "eth0\nlo\n", denyOK: map[string]bool{"10.96.0.1:443": true}},
			want: []string{"reached 10.96.0.1:443", "though the other targets were refused", "is enforced in namespace sbx, but not for these addresses", "the node's own addresses"}},
		{name: "control unreached", c: &cluster{ifaces: "eth0\nlo\n", ctrlNo: map[string]bool{"10.96.0.10:53": true}},
			want: []string{"proved nothing", "10.96.0.10:53 (TimeoutError: timed out)", "kubernetes.isolation_targets"}},
		{name: "no targets", c: &cluster{ifaces: "eth0\nlo\n"}, nodns: true, opts: []Option{WithAPIServerTarget(false)},
			want: []string{"saw interfaces [eth0 lo]", "no target to try", "kubernetes.isolation_targets"}},
		{name: "cluster DNS and API server off", c: &cluster{ifaces: "eth0\nlo\n"}, opts: []Option{WithClusterDNSTarget(false), WithAPIServerTarget(false)},
			want: []string{"no target to try"}},
		{name: "target name unresolved", c: &cluster{ifaces: "eth0\nlo\n"}, opts: []Option{WithIsolationTargets("nowhere.example:80")},
			want: []string{`target "nowhere.example:80": resolve nowhere.example here`}},
		{name: "probe script fails", c: &cluster{ifaces: "eth0\nlo\n", modeErr: true},
			want: []string{"sandbox-like pod: the probe script failed (exit 1", "Traceback: boom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, cs, _ := newCluster(t, tc.c, tc.opts...)
			if tc.nodns {
				require.NoError(t, cs.CoreV1().Services("kube-system").Delete(context.Background(), "kube-dns", metav1.DeleteOptions{}))
			}
			res, err := k.Run(context.Background(), testSpec(t))
			require.ErrorIs(t, err, ErrNetworkNotIsolated)
			require.ErrorIs(t, err, sandbox.ErrNotIsolated)
			require.Nil(t, res)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			iso := k.Isolation()
			require.Empty(t, iso.Mechanism)
			require.Equal(t, err, iso.Err)
			require.Contains(t, iso.String(), "not proven")
			requireNoPods(t, cs)
		})
	}
}

// Loopback alone is proof: no connect probe runs.
func TestIsolationByLoopback(t *testing.T) {
	c := &cluster{ifaces: "lo\n"}
	k, _, _ := newCluster(t, c)
	require.NoError(t, k.CheckNetwork(context.Background()))
	require.Equal(t, IsolationLoopback, k.Isolation().Mechanism)
	require.Contains(t, k.Isolation().String(), "loopback only (lo)")
	require.Zero(t, c.count("deny")+c.count("control"))
}

// clock is a time tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A proof holds for the recheck interval; from half way a run starts a new
// probe without waiting for it, and a failed one refuses at once.
func TestIsolationRecheck(t *testing.T) {
	c := &cluster{ifaces: "eth0\nlo\n"}
	k, _, _ := newCluster(t, c, WithIsolationRecheck(4*time.Minute))
	clk := &clock{now: time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)}
	k.now = clk.Now
	ctx := context.Background()
	require.NoError(t, k.CheckNetwork(ctx))
	require.Equal(t, 1, c.count("deny"))

	clk.Add(time.Minute)
	require.NoError(t, k.CheckNetwork(ctx))
	require.False(t, k.Isolation().Probing, "a fresh proof starts nothing")

	// Half way: the run does not wait for the new probe, which is held.
	hold := make(chan struct{})
	c.mu.Lock()
	c.hold = hold
	c.denyOK = map[string]bool{"10.96.0.10:53": true} // the policy is gone
	c.mu.Unlock()
	clk.Add(time.Minute + time.Second)
	require.NoError(t, k.CheckNetwork(ctx))
	require.True(t, k.Isolation().Probing)
	for range 5 {
		require.NoError(t, k.CheckNetwork(ctx), "one probe at a time, and the proof still holds")
	}
	close(hold)
	require.Eventually(t, func() bool { return !k.Isolation().Probing }, 5*time.Second, 5*time.Millisecond)
	err := k.CheckNetwork(ctx)
	require.ErrorIs(t, err, ErrNetworkNotIsolated, "a failed re-proof refuses at once")
	require.Contains(t, err.Error(), "reached 10.96.0.10:53")
	require.Equal(t, 2, c.count("deny"))
	require.Equal(t, 2, c.count("ls"))

	// The failure is remembered for the retry time, then probed again.
	c.mu.Lock()
	c.denyOK = nil
	c.mu.Unlock()
	require.ErrorIs(t, k.CheckNetwork(ctx), ErrNetworkNotIsolated)
	require.Equal(t, 2, c.count("ls"))
	clk.Add(31 * time.Second)
	require.NoError(t, k.CheckNetwork(ctx))
	require.Equal(t, 3, c.count("ls"))

	// Past the interval with no run in between, the next run waits for
	// a new proof.
	clk.Add(5 * time.Minute)
	require.NoError(t, k.CheckNetwork(ctx))
	require.Equal(t, 4, c.count("ls"))
}

// Runs that find no proof share one probe; a caller that gives up stops
// waiting, not the probe, whose answer the next one takes.
func TestIsolationOneProbeAndCancel(t *testing.T) {
	hold := make(chan struct{})
	c := &cluster{ifaces: "eth0\nlo\n", hold: hold}
	k, cs, _ := newCluster(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- k.CheckNetwork(ctx) }()
	}
	require.Eventually(t, func() bool { return k.Isolation().Probing }, 5*time.Second, 5*time.Millisecond)
	cancel()
	for range 4 {
		err := <-errs
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, ErrNetworkNotIsolated)
	}
	require.True(t, k.Isolation().Probing, "the probe goes on")
	close(hold)
	require.NoError(t, k.CheckNetwork(context.Background()))
	require.Equal(t, 1, c.count("ls"))
	require.Equal(t, 1, c.count("control"))
	requireNoPods(t, cs)
}

// Close ends a probe under way and deletes its Pods.
func TestIsolationProbeClose(t *testing.T) {
	c := &cluster{ifaces: "eth0\nlo\n", hold: make(chan struct{})}
	k, cs, _ := newCluster(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = k.CheckNetwork(ctx) }()
	require.Eventually(t, func() bool { return k.Isolation().Probing }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, k.Close())
	cancel()
	require.False(t, k.Isolation().Probing)
	require.ErrorIs(t, k.Isolation().Err, ErrNetworkNotIsolated)
	requireNoPods(t, cs)
}

func TestIsolationOptions(t *testing.T) {
	base := []Option{WithClient(typedCore{fake.NewClientset().CoreV1()}), WithAttacher(&fakeInit{}), WithVersion("test")}
	for _, bad := range []string{"10.0.0.1", "10.0.0.1:0", "10.0.0.1:x", ":53", "fd00::1:53"} {
		_, err := New(append(base, WithIsolationTargets(bad))...)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "isolation target")
	}
	_, err := New(append(base, WithIsolationTargets("10.0.0.1:53", "[fd00::1]:53", "dns.example:53"), WithIsolationRecheck(time.Minute))...)
	require.NoError(t, err)
	_, err = New(append(base, WithIsolationRecheck(-time.Second))...)
	require.ErrorContains(t, err, "isolation recheck")
}

// The reaper finds a control Pod left behind, as it finds a sandbox Pod.
func TestReapFindsControlPods(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil)
	for name, managed := range map[string]string{"a": "true", "b": controlManaged, "c": "other"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sbx", Labels: map[string]string{
			sandbox.LabelManaged: managed, sandbox.LabelOwnerHost: "elsewhere",
		}, CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}}
		_, err := cs.CoreV1().Pods("sbx").Create(context.Background(), pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	reaped, err := k.Reap(context.Background(), sandbox.ReapOptions{Grace: time.Minute, DryRun: true})
	require.NoError(t, err)
	var names []string
	for _, r := range reaped {
		names = append(names, r.Name)
	}
	require.ElementsMatch(t, []string{"a", "b"}, names)
}
