package doctor

import (
	"errors"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

func goodFacts() docker.HostFacts {
	return docker.HostFacts{
		EngineVersion: "27.3.1", APIVersion: "1.47", KernelVersion: "6.1.0", OS: "Debian GNU/Linux 12",
		Driver: "overlay2", CgroupVersion: "2", CgroupDriver: "systemd",
		SecurityOptions: []string{"name=apparmor", "name=seccomp,profile=builtin", "name=cgroupns"},
		Runtimes:        []string{"runc", "runsc"}, DefaultRuntime: "runc",
		RootDir: "/var/lib/docker",
		Image: docker.ImageFacts{Ref: "sandboxrun/runner:1.0", Present: true, ID: "sha256:0123456789abcdef",
			Labels: map[string]string{ocispec.AnnotationVersion: "1.0", ocispec.AnnotationRevision: "abc"}},
	}
}

func TestJudgeDockerGoodHost(t *testing.T) {
	for _, c := range judgeDocker(goodFacts(), "1.0") {
		require.Equal(t, Pass, c.Status, "%s: %s", c.Name, c.Reason)
		require.Equal(t, AreaHost, c.Area)
	}
}

func TestJudgeDockerFindings(t *testing.T) {
	for _, tc := range []struct {
		check  string
		status Status
		breakF func(*docker.HostFacts)
		reason string
	}{
		{"api", Warn, func(f *docker.HostFacts) { f.APIVersion = "1.40" }, "older than 1.41"},
		{"storage_driver", Warn, func(f *docker.HostFacts) { f.Driver = "fuse-overlayfs"; f.UsrVolumes = true; f.UsrVolume = "v" }, "20-30 %"},
		{"storage_driver", Warn, func(f *docker.HostFacts) { f.Driver = "vfs" }, "vfs"},
		{"cgroup", Warn, func(f *docker.HostFacts) { f.CgroupVersion = "" }, "does not say"},
		{"seccomp_support", Fail, func(f *docker.HostFacts) { f.SecurityOptions = []string{"name=apparmor"} }, "no seccomp"},
		{"lsm", Warn, func(f *docker.HostFacts) { f.SecurityOptions = []string{"name=seccomp,profile=default"} }, "neither AppArmor nor SELinux"},
		{"runtimes", Fail, func(f *docker.HostFacts) { f.OCIRuntime = "kata" }, `"kata"`},
		{"runner_image", Fail, func(f *docker.HostFacts) { f.Image.Present = false }, "not in the engine"},
		{"runner_image", Warn, func(f *docker.HostFacts) { f.Image.Labels[ocispec.AnnotationVersion] = "0.9" }, "built by sandboxrun 0.9"},
		{"usr_volumes", Warn, func(f *docker.HostFacts) { f.Driver = "fuse-overlayfs" }, "off"},
		{"usr_volumes", Warn, func(f *docker.HostFacts) { f.Driver = "fuse-overlayfs"; f.UsrVolumes = true }, "no /usr copy yet"},
		{"engine_warnings", Warn, func(f *docker.HostFacts) { f.Warnings = []string{"WARNING: No swap limit support"} }, "No swap limit"},
	} {
		t.Run(tc.check+"/"+tc.reason, func(t *testing.T) {
			f := goodFacts()
			tc.breakF(&f)
			c := statusOf(t, judgeDocker(f, "1.0"), tc.check)
			require.Equal(t, tc.status, c.Status, c.Reason)
			require.Contains(t, c.Reason, tc.reason)
			require.NotEmpty(t, c.Fix)
		})
	}
}

func TestJudgeDisk(t *testing.T) {
	free := func(p string) (uint64, error) {
		switch p {
		case "/full":
			return 100 << 20, nil
		case "/gone":
			return 0, errors.New("no such file or directory")
		}
		return 50 << 30, nil
	}
	checks := judgeDisk([]place{{"engine", "/var/lib/docker"}, {"temp", "/full"}, {"sessions", "/gone"}, {"none", ""}}, free)
	require.Len(t, checks, 3)
	require.Equal(t, Pass, checks[0].Status)
	require.Equal(t, "50GiB free at /var/lib/docker", checks[0].Reason)
	require.Equal(t, Warn, checks[1].Status)
	require.Contains(t, checks[1].Fix, "prune")
	require.Equal(t, Warn, checks[2].Status)
	require.Contains(t, checks[2].Reason, "no such file")
}

func TestJudgeCluster(t *testing.T) {
	pol := policy.BuiltinPolicy()
	good := kube.ClusterFacts{Namespace: "sbx", RuntimeClass: "gvisor", Image: "sandboxrun/runner:1", Claims: map[string]error{"skills": nil},
		Network: kube.Isolation{Mechanism: kube.IsolationPolicy, Interfaces: []string{"eth0", "lo"}, Targets: []string{"10.96.0.10:53"}}}
	for _, c := range judgeClusterFacts(good, pol) {
		require.Equal(t, Pass, c.Status, "%s: %s", c.Name, c.Reason)
	}
	denied := errors.New(`pods is forbidden: User "x" cannot create resource "pods"`)
	for _, tc := range []struct {
		check  string
		status Status
		breakF func(*kube.ClusterFacts)
	}{
		{"cluster", Fail, func(f *kube.ClusterFacts) { f.Reach = errors.New("connection refused") }},
		{"rbac_create", Fail, func(f *kube.ClusterFacts) { f.Create = denied }},
		{"rbac_delete", Fail, func(f *kube.ClusterFacts) { f.Delete = denied }},
		{"runner_image", Warn, func(f *kube.ClusterFacts) { f.ImageOnNode = errors.New("on no node") }},
		{"network_isolation", Fail, func(f *kube.ClusterFacts) {
			f.Network = kube.Isolation{Err: errors.New("a probe pod reached 10.96.0.10:53")}
		}},
		{"network_isolation", Warn, func(f *kube.ClusterFacts) { f.Network = kube.Isolation{} }},
		{"claim_skills", Fail, func(f *kube.ClusterFacts) { f.Claims["skills"] = errors.New("does not exist") }},
	} {
		t.Run(tc.check, func(t *testing.T) {
			f := good
			f.Claims = map[string]error{"skills": nil}
			tc.breakF(&f)
			c := statusOf(t, judgeClusterFacts(f, pol), tc.check)
			require.Equal(t, tc.status, c.Status, c.Reason)
			require.NotEmpty(t, c.Fix)
		})
	}
}

func TestReportExitClasses(t *testing.T) {
	r := &Report{Checks: []Check{pass(AreaHost, "a", "ok"), warn(AreaIsolation, "b", "meh", "fix")}}
	require.False(t, r.IsolationFailed())
	require.False(t, r.Unchecked())
	r.add(fail(AreaHost, "runner_image", "missing", "build"))
	require.False(t, r.IsolationFailed())
	require.True(t, r.Unchecked())
	r.add(fail(AreaIsolation, "user", "root", "fix"))
	require.True(t, r.IsolationFailed())
	r = &Report{Checks: []Check{skip(AreaIsolation, "probe", "did not run", "fix")}}
	require.True(t, r.Unchecked())
}
