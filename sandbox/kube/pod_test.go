package kube

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func goldenSpec() sandbox.Spec {
	return sandbox.Spec{
		RunID:    "0123456789abcdef",
		Skill:    "hello",
		SkillDir: "/srv/skills/hello",
		Argv:     []string{"python3", "/skills/hello/scripts/echo.py"},
		Image:    "sandboxrun/runner:0.1.0",
		Limits: policy.Limits{
			Timeout: 30 * time.Second, MemoryBytes: 512 << 20, CPUs: 1, Pids: 256,
			OutputBytes: 1 << 20, TmpBytes: 64 << 20,
		},
	}
}

func goldenParams() podParams {
	return podParams{
		pullPolicy: corev1.PullNever,
		namespace:  "sandboxes",
		image:      "sandboxrun/runner:0.1.0",
		version:    "0.1.0",
		owner: map[string]string{
			sandbox.LabelOwnerPID: "4242", sandbox.LabelOwnerStart: "123456", sandbox.LabelOwnerHost: "build-host",
		},
		created:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		deadline:    98 * time.Second,
		deleteGrace: time.Second,
	}
}

// The golden files pin every setting of the generated Pod: a loosened
// security setting shows up in review as a change to testdata/.
func TestPodGolden(t *testing.T) {
	tests := []struct {
		name   string
		change func(*sandbox.Spec, *podParams)
	}{
		{"default", func(*sandbox.Spec, *podParams) {}},
		{"workspace_readonly", func(s *sandbox.Spec, _ *podParams) { s.Workspace = "/home/u/project" }},
		{"runtime_class_custom_limits", func(s *sandbox.Spec, p *podParams) {
			p.runtimeClass = "gvisor"
			s.Limits.CPUs, s.Limits.MemoryBytes, s.Limits.TmpBytes, s.Limits.OutputBytes = 0.25, 96<<20, 8<<20, 4096
		}},
		{"unusual_ids", func(s *sandbox.Spec, _ *podParams) { s.RunID, s.Skill = "Run_ID.With-Caps", "données" }},
		// The workspace travels over the attach into a tmpfs of the size
		// Run gives the limit; nothing of the host folder is mounted.
		{"workspace_writable", func(s *sandbox.Spec, _ *podParams) {
			s.Workspace, s.WorkspaceWritable, s.Limits.WorkspaceWriteBytes = "/var/lib/sessions/abc", true, 96<<20
		}},
		// An egress run with a proxy that ends TLS: a small tmpfs for the
		// trust bundle, and still no network (the proxy is reached over
		// the attach); a registry's pull policy.
		{"egress_ca_pull_policy", func(s *sandbox.Spec, p *podParams) {
			s.EgressSocket, s.EgressCA = "/tmp/egress-1/proxy.sock", "/tmp/egress-1/ca.pem"
			p.pullPolicy = corev1.PullIfNotPresent
		}},
		// The skill folder travels over the attach into a tmpfs at
		// /skills that sandbox-init fills; nothing of the node is mounted.
		{"skill_sent", func(_ *sandbox.Spec, p *podParams) { p.skillSendMax = 8 << 20 }},
		{"claims", func(s *sandbox.Spec, p *podParams) {
			s.Workspace = "/srv/work/p1"
			p.claims = []Claim{{Name: "sandbox-skills", Path: "/srv/skills"}, {Name: "sandbox-work", Path: "/srv/work"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, p := goldenSpec(), goldenParams()
			tt.change(&spec, &p)
			got, err := json.MarshalIndent(podFor(&spec, p), "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			path := filepath.Join("testdata", tt.name+".golden.json")
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./sandbox/kube -run Golden -update to create it")
			require.Equal(t, string(want), string(got))
		})
	}
}

// Independently of the golden files, the settings the product promises.
func TestPodSecurityPromises(t *testing.T) {
	spec := goldenSpec()
	spec.Workspace = "/w"
	pod := podFor(&spec, goldenParams())
	ps := pod.Spec
	require.Equal(t, corev1.RestartPolicyNever, ps.RestartPolicy)
	require.False(t, *ps.AutomountServiceAccountToken)
	require.False(t, *ps.EnableServiceLinks)
	require.False(t, ps.HostNetwork || ps.HostPID || ps.HostIPC)
	require.EqualValues(t, 98, *ps.ActiveDeadlineSeconds)
	require.True(t, *ps.SecurityContext.RunAsNonRoot)
	require.Len(t, ps.Containers, 1)
	c := ps.Containers[0]
	require.Equal(t, corev1.PullNever, c.ImagePullPolicy)
	require.True(t, c.Stdin && c.StdinOnce && !c.TTY)
	require.Equal(t, []string{sandbox.InitPath}, c.Command)
	require.Empty(t, c.Args, "the command comes in the job, never in the pod")
	sc := c.SecurityContext
	require.EqualValues(t, sandbox.SandboxUID, *sc.RunAsUser)
	require.EqualValues(t, sandbox.SandboxGID, *sc.RunAsGroup)
	require.True(t, *sc.RunAsNonRoot && *sc.ReadOnlyRootFilesystem)
	require.False(t, *sc.AllowPrivilegeEscalation || *sc.Privileged)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Empty(t, sc.Capabilities.Add)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	require.Equal(t, c.Resources.Limits, c.Resources.Requests, "requests equal limits")
	require.Equal(t, int64(512<<20), c.Resources.Limits.Memory().Value())
	require.Equal(t, int64(1000), c.Resources.Limits.Cpu().MilliValue())
	for _, m := range c.VolumeMounts {
		if m.MountPath != sandbox.ScratchDir {
			require.True(t, m.ReadOnly, "%s is read-only", m.MountPath)
		}
	}
	for _, v := range ps.Volumes {
		if v.EmptyDir != nil {
			require.Equal(t, corev1.StorageMediumMemory, v.EmptyDir.Medium)
			require.Equal(t, int64(64<<20), v.EmptyDir.SizeLimit.Value())
		}
	}
}

func TestNamesAndLabelValues(t *testing.T) {
	for _, tc := range []struct{ runID, pod string }{
		{"0123456789abcdef", "sandboxrun-0123456789abcdef"},
		{"it-12-3", "sandboxrun-it-12-3"},
	} {
		require.Equal(t, tc.pod, podName(tc.runID))
	}
	// Changed ids keep a digest, so ids differing in case never collide.
	require.NotEqual(t, podName("Ab"), podName("ab"))
	require.NotEqual(t, podName("a_b"), podName("a-b"))
	long := podName("A" + string(make([]byte, 0)) + "bcdefghijklmnopqrstuvwxyz0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZ01")
	require.LessOrEqual(t, len(long), 63)
	require.Regexp(t, `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`, long)

	require.Equal(t, "hello", labelValue("hello"))
	for _, v := range []string{"données", "ends-", "a:b", string(make([]byte, 64))} {
		got := labelValue(v)
		require.Regexp(t, labelValuePattern, got)
		require.NotEqual(t, v, got)
	}
}
