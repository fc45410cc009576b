//go:build kube

package kube

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// TestConformance runs the backend-neutral contract on the cluster: the
// same cases the Docker runner passes. Skill and workspace folders are
// hostPath volumes, which works as the node is this host. WarmRuns
// gets a runner of one warm pod whose pods wait a minute at most: an
// idle one holds its cpu on the node, which the other cases' pods need.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, sandboxtest.Env{
		Runner: runner,
		Gone:   requirePodGone,
		Warm:   newWarmRunner(t, 1, time.Minute),
	})
}

// The probe pod proved that pods here have loopback only before the
// first run without network: on this profile no connect probe is needed.
func TestNoNetworkIsProven(t *testing.T) {
	require.NoError(t, runner.CheckNetwork(context.Background()))
	iso := runner.Isolation()
	require.Equal(t, kubebackend.IsolationLoopback, iso.Mechanism, "%v", iso)
	require.Equal(t, []string{"lo"}, iso.Interfaces)
	require.Empty(t, iso.Targets)
}

func TestSkillFromTheRepository(t *testing.T) {
	skillDir, err := filepath.Abs("../../skills/hello")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, sandbox.Spec{
		Skill:    "hello",
		SkillDir: skillDir,
		Argv:     []string{"python3", "/skills/hello/scripts/echo.py"},
		Runtime:  "python3",
		Stdin:    []byte(`{"greeting": "hi"}`),
		Limits:   sandboxtest.DefaultLimits(),
	})
	require.NoError(t, err)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.JSONEq(t, `{"skill": "hello", "runtime": "python", "args": {"greeting": "hi"}}`, string(res.Output))
	require.NotEmpty(t, res.ImageID)
	requirePodGone(t, res.ID)
}

func TestCancelDeletesThePod(t *testing.T) {
	dir := sandboxtest.HostSkillDir(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	spec := sandbox.Spec{
		RunID: "cancel-" + filepath.Base(dir), Skill: "t", SkillDir: dir,
		Argv:   []string{"python3", "-c", "import time; print('up', flush=True); time.sleep(600)"},
		Limits: sandboxtest.DefaultLimits(), Stdout: &stdout,
	}
	go func() {
		for !stdout.has("up") {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}()
	res, err := runner.Run(ctx, spec)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	require.Equal(t, "up\n", res.Stdout)
	requirePodGone(t, spec.RunID)
}

// A pod whose owner process is gone is reaped; the pods of this live
// process are not.
func TestReapDeadOwner(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	no, yes, uid := false, true, int64(sandbox.SandboxUID)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxrun-leaked-" + strconv.Itoa(os.Getpid()), Labels: map[string]string{
			sandbox.LabelManaged: "true", sandbox.LabelOwnerPID: "999999999", sandbox.LabelOwnerHost: host,
		}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{
				Name: "sandbox", Image: runner.Image(), ImagePullPolicy: corev1.PullNever,
				Command: []string{sandbox.InitPath}, Stdin: true, StdinOnce: true,
				SecurityContext: &corev1.SecurityContext{RunAsUser: &uid, RunAsNonRoot: &yes, AllowPrivilegeEscalation: &no},
			}},
		},
	}
	pods := runner.Client().Pods(runner.Namespace())
	_, err = pods.Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		zero := int64(0)
		_ = pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	got, err := runner.Reap(context.Background(), sandbox.ReapOptions{OnlyDeadOwners: true})
	require.NoError(t, err)
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
		require.True(t, r.Removed)
	}
	require.Contains(t, names, pod.Name)
	left, err := livePods(context.Background(), sandbox.LabelOwnerPID+"=999999999")
	require.NoError(t, err)
	require.Empty(t, left)
}
