package doctor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// gvisorProbe is what the probe printed under runsc 20221219 with a 512 MiB
// limit (copied from a real run, cut to what differs from goodProbe).
func gvisorProbe(kv ...string) probeOutput {
	p := with("CapAmb", "", "NoNewPrivs", "", "no_new_privs_prctl", "1", "Seccomp", "0",
		"interfaces", "", "interfaces_proc", "lo", "kcore", "absent",
		"memory_max", "", "memsw_max", "", "cpu_max", " ", "pids_max", "",
		"mem_total_kb", "524288", "nproc", "2",
		"kernel", "4.4.0", "proc_version", "Linux version "+gvisorVersion, "dmesg", "[    0.000000] Starting gVisor...")
	for i := 0; i < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

// Under gVisor nothing fails falsely: what gVisor shows passes, what it
// cannot show warns with a reason naming gVisor and a fix.
func TestJudgeUnderGVisor(t *testing.T) {
	e := goodExpect()
	e.Runtime = "runsc"
	checks := judge(gvisorProbe(), e)
	require.Len(t, checks, 17)
	warned := map[string]bool{}
	for _, c := range checks {
		require.NotEqual(t, Fail, c.Status, "%s: %s", c.Name, c.Reason)
		if c.Status == Warn {
			warned[c.Name] = true
			require.Contains(t, c.Reason, "gVisor", c.Name)
			require.NotEmpty(t, c.Fix, c.Name)
		}
	}
	require.Equal(t, map[string]bool{"seccomp": true, "memory": true, "cpu": true, "pids": true}, warned)
	require.Contains(t, statusOf(t, checks, "no_new_privs").Reason, "prctl")
	require.Contains(t, statusOf(t, checks, "interfaces").Reason, "/proc/net/dev")
	require.Contains(t, statusOf(t, checks, "memory").Reason, "512MiB")
	require.Contains(t, statusOf(t, checks, "cpu").Reason, "2 CPUs")
	require.Contains(t, statusOf(t, checks, "seccomp").Fix, "--oci-seccomp")
	require.Equal(t, Pass, statusOf(t, checks, "runtime").Status)
}

// What gVisor does show still fails when it is wrong.
func TestJudgeUnderGVisorFails(t *testing.T) {
	for _, tc := range []struct {
		check  string
		probe  probeOutput
		reason string
	}{
		{"memory", gvisorProbe("mem_total_kb", "1048576"), "MemTotal is 1GiB, the plan promised 512MiB"},
		{"no_new_privs", gvisorProbe("no_new_privs_prctl", "0"), `prctl(PR_GET_NO_NEW_PRIVS) is "0"`},
		{"interfaces", gvisorProbe("interfaces_proc", "eth0,lo"), "eth0, lo, where the plan gives no network"},
		{"capabilities", gvisorProbe("CapPrm", "0000000000002000"), "CapPrm: NET_RAW"},
		// CapAmb may be missing only when permitted and inheritable are
		// seen empty: the ambient set lies within both.
		{"capabilities", gvisorProbe("CapInh", "0000000000002000", "CapPrm", "0000000000002000"), "CapAmb unreadable"},
		{"capabilities", gvisorProbe("CapInh", ""), "CapInh unreadable"},
	} {
		t.Run(tc.check+"/"+tc.reason, func(t *testing.T) {
			c := statusOf(t, judge(tc.probe, goodExpect()), tc.check)
			require.Equal(t, Fail, c.Status, c.Reason)
			require.Contains(t, c.Reason, tc.reason)
			require.NotEmpty(t, c.Fix)
		})
	}
}

func TestJudgeUnderGVisorWarns(t *testing.T) {
	for _, tc := range []struct {
		name, check string
		probe       probeOutput
		reason      string
	}{
		{"no MemTotal", "memory", gvisorProbe("mem_total_kb", ""), "no MemTotal"},
		{"a smaller limit", "memory", gvisorProbe("mem_total_kb", "262144"), "below the plan's 512MiB"},
		{"no status line, no python3", "no_new_privs", gvisorProbe("no_new_privs_prctl", ""), "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := statusOf(t, judge(tc.probe, goodExpect()), tc.check)
			require.Equal(t, Warn, c.Status, c.Reason)
			require.Contains(t, c.Reason, tc.reason)
		})
	}
	// The same hidden figures without gVisor keep the general warning, and
	// Seccomp 0 without gVisor still fails.
	p := gvisorProbe("kernel", "6.1.0", "proc_version", "Linux version 6.1.0", "dmesg", "")
	checks := judge(p, goodExpect())
	require.Equal(t, Fail, statusOf(t, checks, "seccomp").Status)
	require.NotContains(t, statusOf(t, checks, "cpu").Reason, "gVisor")
}

// The probe prints the keys the gVisor judges read.
func TestProbePrintsGVisorKeys(t *testing.T) {
	root, err := writeProbe(t.TempDir(), true)
	require.NoError(t, err)
	script := readFile(t, root, probeSkill, probeScript)
	for _, key := range []string{"interfaces_proc", "no_new_privs_prctl", "mem_total_kb", "nproc"} {
		require.Contains(t, script, "say "+key+" ", key)
	}
}
