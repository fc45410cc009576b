package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

// goodProbe is what the probe prints in a correct sandbox on cgroup v1.
const goodProbe = `uid=65532
gid=65532
groups=65532
CapInh=0000000000000000
CapPrm=0000000000000000
CapEff=0000000000000000
CapBnd=0000000000000000
CapAmb=0000000000000000
NoNewPrivs=1
Seccomp=2
interfaces=lo
nameservers=
dns_lookup=none
rootfs_write=no
rootfs_mount=ro
etc_write=no
etc_mount=ro
skills_write=no
skills_mount=ro
workspace_write=no
workspace_mount=ro
engine_sockets=
docker_host=
kcore=refused
proc_sys=refused
sys_firmware=refused
cgroup=v1
memory_max=536870912
memsw_max=536870912
cpu_max=100000 100000
pids_max=256
kernel=6.1.0
proc_version=Linux version 6.1.0 (builder) #1 SMP
dmesg=
done=1
`

func goodExpect() Expect {
	return Expect{
		Limits:     policy.Limits{Timeout: 30 * time.Second, MemoryBytes: 512 << 20, CPUs: 1, Pids: 256},
		Workspace:  true,
		HostKernel: "6.1.0",
	}
}

// with returns goodProbe with key set to value (added when absent).
func with(kv ...string) probeOutput {
	p := parseProbe(goodProbe)
	for i := 0; i < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

func statusOf(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q", name)
	return Check{}
}

func TestJudgeGoodSandboxPassesEveryLine(t *testing.T) {
	checks := judge(parseProbe(goodProbe), goodExpect())
	require.Len(t, checks, 17)
	for _, c := range checks {
		require.Equal(t, Pass, c.Status, "%s: %s", c.Name, c.Reason)
		require.Equal(t, AreaIsolation, c.Area)
		require.NotEmpty(t, c.Reason)
		require.Empty(t, c.Fix)
	}
}

// Each broken property fails its own line, with a reason and a fix.
func TestJudgeEachBrokenPropertyFails(t *testing.T) {
	for _, tc := range []struct {
		check  string
		probe  probeOutput
		reason string
	}{
		{"user", with("uid", "0"), `uid "0"`},
		{"user", with("gid", "0"), `gid "0"`},
		{"user", with("groups", "65532,0"), "root"},
		{"capabilities", with("CapBnd", "0000000000002000"), "CapBnd: NET_RAW"},
		{"capabilities", with("CapEff", "00000000a80425fb"), "CapEff: CHOWN,DAC_OVERRIDE"},
		{"capabilities", with("CapAmb", "zz"), "CapAmb unreadable"},
		{"no_new_privs", with("NoNewPrivs", "0"), `"0"`},
		{"seccomp", with("Seccomp", "0"), "no system call filter"},
		{"interfaces", with("interfaces", "eth0,lo"), "eth0, lo, where the plan gives no network"},
		{"dns", with("dns_lookup", "resolved"), "a name resolved"},
		{"rootfs_read_only", with("rootfs_write", "yes"), "/: write yes, mount ro"},
		{"rootfs_read_only", with("rootfs_mount", "rw"), "/: write no, mount rw"},
		{"rootfs_read_only", with("etc_write", "yes"), "/etc: write yes"},
		{"skills_read_only", with("skills_mount", "rw"), "write no, mount rw"},
		{"skills_read_only", with("skills_write", "absent"), "write absent"},
		{"workspace", with("workspace_mount", "rw"), "not read-only (write no, mount rw)"},
		{"workspace", with("workspace_write", "yes"), "not read-only"},
		{"engine_socket", with("engine_sockets", "/var/run/docker.sock"), "/var/run/docker.sock"},
		{"engine_socket", with("docker_host", "tcp://10.0.0.1:2375"), "tcp://10.0.0.1:2375"},
		{"proc_kcore", with("kcore", "readable"), "readable"},
		{"proc_sys", with("proc_sys", "writable"), "writable"},
		{"proc_kcore", with("kcore", "unmasked"), "unmasked"},
		{"proc_sys", with("proc_sys", "unprotected"), "unprotected"},
		{"sys_firmware", with("sys_firmware", "visible"), "visible"},
		{"memory", with("memory_max", "9223372036854771712"), "no memory limit"},
		{"memory", with("memory_max", "1073741824"), "cgroup limit 1GiB, the plan promised 512MiB"},
		{"memory", with("memsw_max", "1073741824"), "swap allowed"},
		{"memory", with("cgroup", "v2", "memory_max", "536870912", "memory_swap_max", "max"), "memory.swap.max max"},
		{"cpu", with("cpu_max", "-1 100000"), "no CPU quota"},
		{"cpu", with("cpu_max", "max 100000"), "no CPU quota"},
		{"cpu", with("cpu_max", "200000 100000"), "quota 2 CPUs"},
		{"pids", with("pids_max", "max"), "no pids limit"},
		{"pids", with("pids_max", "4096"), "4096, the plan promised 256"},
	} {
		t.Run(tc.check+"/"+tc.reason, func(t *testing.T) {
			c := statusOf(t, judge(tc.probe, goodExpect()), tc.check)
			require.Equal(t, Fail, c.Status, c.Reason)
			require.Contains(t, c.Reason, tc.reason)
			require.NotEmpty(t, c.Fix)
		})
	}
}

func TestJudgeFollowsThePlan(t *testing.T) {
	t.Run("network given", func(t *testing.T) {
		e := goodExpect()
		e.Limits.Network = true
		checks := judge(with("interfaces", "eth0,lo", "dns_lookup", "resolved"), e)
		require.Equal(t, Pass, statusOf(t, checks, "interfaces").Status)
		require.Equal(t, Pass, statusOf(t, checks, "dns").Status)
		c := statusOf(t, judge(parseProbe(goodProbe), e), "interfaces")
		require.Equal(t, Fail, c.Status, "a plan with network but only lo is not what was promised")
	})
	t.Run("network filtered by an enforced policy", func(t *testing.T) {
		e := goodExpect()
		e.PolicyIsolated = true
		c := statusOf(t, judge(with("interfaces", "eth0,lo"), e), "interfaces")
		require.Equal(t, Pass, c.Status, c.Reason)
		require.Contains(t, c.Reason, "enforced deny-all NetworkPolicy")
		require.Equal(t, Fail, statusOf(t, judge(with("interfaces", "eth0,lo", "dns_lookup", "resolved"), e), "dns").Status,
			"a name that resolves is a leak, filtered interface or not")
	})
	t.Run("writable workspace", func(t *testing.T) {
		e := goodExpect()
		e.WorkspaceWritable = true
		require.Equal(t, Pass, statusOf(t, judge(with("workspace_write", "yes", "workspace_mount", "rw"), e), "workspace").Status)
		require.Equal(t, Fail, statusOf(t, judge(with("workspace_mount", "rw"), e), "workspace").Status)
	})
	t.Run("no workspace", func(t *testing.T) {
		e := goodExpect()
		e.Workspace = false
		p := with("workspace_write", "absent")
		delete(p, "workspace_mount")
		require.Equal(t, Pass, statusOf(t, judge(p, e), "workspace").Status)
		require.Equal(t, Fail, statusOf(t, judge(parseProbe(goodProbe), e), "workspace").Status)
	})
	t.Run("cgroup v2", func(t *testing.T) {
		p := with("cgroup", "v2", "memory_swap_max", "0", "cpu_max", "150000 100000", "pids_max", "256")
		delete(p, "memsw_max")
		e := goodExpect()
		e.Limits.CPUs = 1.5
		for _, c := range judge(p, e) {
			require.Equal(t, Pass, c.Status, "%s: %s", c.Name, c.Reason)
		}
	})
	t.Run("pods have no pids field", func(t *testing.T) {
		e := goodExpect()
		e.PodPids = true
		c := statusOf(t, judge(with("pids_max", "max"), e), "pids")
		require.Equal(t, Warn, c.Status, c.Reason)
		require.Contains(t, c.Fix, "podPidsLimit")
		require.Equal(t, Fail, statusOf(t, judge(with("pids_max", "4096"), e), "pids").Status, "a limit other than the plan's still fails")
	})
	t.Run("no kcore", func(t *testing.T) {
		require.Equal(t, Pass, statusOf(t, judge(with("kcore", "absent"), goodExpect()), "proc_kcore").Status)
	})
	t.Run("limits hidden", func(t *testing.T) {
		checks := judge(with("memory_max", "", "cpu_max", "", "pids_max", ""), goodExpect())
		for _, n := range []string{"memory", "cpu", "pids"} {
			require.Equal(t, Warn, statusOf(t, checks, n).Status, n)
		}
	})
	t.Run("no swap accounting", func(t *testing.T) {
		p := parseProbe(goodProbe)
		delete(p, "memsw_max")
		c := statusOf(t, judge(p, goodExpect()), "memory")
		require.Equal(t, Warn, c.Status)
		require.Contains(t, c.Fix, "swapaccount=1")
	})
}

func TestJudgeRuntime(t *testing.T) {
	gvisor := "Linux version " + gvisorVersion
	for _, tc := range []struct {
		name, want, kernel, version, host string
		status                            Status
	}{
		{"runc default", "", "6.1.0", "Linux version 6.1.0", "6.1.0", Pass},
		{"gvisor asked and seen", "runsc", "4.4.0", gvisor, "6.1.0", Pass},
		{"gvisor asked, runc seen", "runsc", "6.1.0", "Linux version 6.1.0", "6.1.0", Fail},
		{"gvisor as the default", "", "4.4.0", gvisor, "6.1.0", Pass},
		{"kata asked and seen", "kata-qemu", "6.6.1", "Linux version 6.6.1", "6.1.0", Pass},
		{"kata asked, runc seen", "kata-qemu", "6.1.0", "Linux version 6.1.0", "6.1.0", Fail},
		{"host kernel unknown", "", "6.1.0", "Linux version 6.1.0", "", Warn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := goodExpect()
			e.Runtime, e.HostKernel = tc.want, tc.host
			c := judgeRuntime(with("kernel", tc.kernel, "proc_version", tc.version), e)
			require.Equal(t, tc.status, c.Status, c.Reason)
		})
	}
}

func TestParseProbe(t *testing.T) {
	p := parseProbe("a=1\nnoise from the shell\nb=x=y\r\n=skipped\nlist=lo,eth0\nempty=\n")
	require.Equal(t, probeOutput{"a": "1", "b": "x=y", "list": "lo,eth0", "empty": ""}, p)
	require.Equal(t, []string{"lo", "eth0"}, p.list("list"))
	require.Nil(t, p.list("empty"))
	require.False(t, p.complete())
	require.True(t, parseProbe(goodProbe).complete())
}

func TestCapNames(t *testing.T) {
	names, ok := capNames("000001ffffffffff")
	require.True(t, ok)
	require.Len(t, names, 41)
	require.Equal(t, "CHOWN", names[0])
	require.Equal(t, "CHECKPOINT_RESTORE", names[40])
	names, ok = capNames("8000000000000000")
	require.True(t, ok)
	require.Equal(t, []string{"cap_63"}, names)
	_, ok = capNames("")
	require.False(t, ok)
}

// The probe skill is complete and its script prints every key judge reads.
func TestProbeSkillWritten(t *testing.T) {
	root, err := writeProbe(t.TempDir(), true)
	require.NoError(t, err)
	script := readFile(t, root, probeSkill, probeScript)
	require.Contains(t, readFile(t, root, probeSkill, "SKILL.md"), writeGrant)
	ro, err := writeProbe(t.TempDir(), false)
	require.NoError(t, err)
	require.NotContains(t, readFile(t, ro, probeSkill, "SKILL.md"), "allowed-tools")
	for key := range parseProbe(goodProbe) {
		folder, _, _ := strings.Cut(key, "_")
		require.True(t, strings.Contains(script, "say "+key+" ") || strings.Contains(script, `say "$k"`) ||
			strings.Contains(script, "say "+key+`"`) || strings.Contains(script, "folder "+folder+" "),
			"the probe prints no %s", key)
	}
	require.Contains(t, readFile(t, root, probeSkill, "SKILL.md"), "name: "+probeSkill)
}
