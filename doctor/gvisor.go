package doctor

import (
	"fmt"
	"strconv"

	units "github.com/docker/go-units"
)

// Under gVisor the probe talks to gVisor's kernel (the Sentry), not the
// host's, and that kernel reports some properties differently or not at
// all: it shows no cgroup, has no NoNewPrivs or CapAmb line in
// /proc/self/status, and applies the container's seccomp profile only
// when runsc runs with --oci-seccomp. The judges below read what gVisor
// does expose, and say WARN, with the reason, for what it cannot show:
// neither a FAIL for a property gVisor provides another way, nor a PASS
// for one nobody measured.

// gvisorSeccomp judges Seccomp 0 under gVisor: no filter inside the
// sandbox, though the script's system calls never reach the host kernel.
func gvisorSeccomp() Check {
	return warn(AreaIsolation, "seccomp",
		"gVisor reports Seccomp 0: runsc does not load the engine's seccomp profile inside the sandbox; "+
			"the script's system calls are served by gVisor's kernel, which itself runs under gVisor's own seccomp filter on the host",
		"to filter inside the sandbox as well, register runsc with --oci-seccomp in the engine's daemon.json")
}

// gvisorMemory judges the memory limit from gVisor's MemTotal, which runsc
// sizes to the container's cgroup limit: more than the plan promised is a
// failure; the promised figure is a warning, since the cgroup that enforces
// it, and its swap setting, are on the host, out of the probe's sight.
func gvisorMemory(p probeOutput, want int64) Check {
	kb, err := strconv.ParseInt(p["mem_total_kb"], 10, 64)
	if err != nil || kb <= 0 {
		return warn(AreaIsolation, "memory", "gVisor shows no cgroup and no MemTotal: the memory limit cannot be seen inside",
			"check memory.limit_in_bytes of the container's cgroup on the engine host")
	}
	got := kb << 10
	if got > want+pageSlack {
		return fail(AreaIsolation, "memory", fmt.Sprintf("gVisor's MemTotal is %s, the plan promised %s: gVisor sizes its memory to the container's limit, so the cgroup has none or a larger one",
			units.BytesSize(float64(got)), units.BytesSize(float64(want))),
			"create sandboxes with the plan's memory limit")
	}
	if got < want-pageSlack {
		return warn(AreaIsolation, "memory", fmt.Sprintf("gVisor's MemTotal is %s, below the plan's %s: the container's cgroup holds a smaller limit than promised",
			units.BytesSize(float64(got)), units.BytesSize(float64(want))),
			"check the limit of the container's cgroup on the engine host")
	}
	return warn(AreaIsolation, "memory", fmt.Sprintf("gVisor shows no cgroup; its MemTotal is %s, the plan's limit (gVisor sizes its memory to the container's cgroup), but swap beyond it is set on the host, out of sight",
		units.BytesSize(float64(got))),
		"check memory.memsw.limit_in_bytes (v1) or memory.swap.max (v2) of the container's cgroup on the engine host")
}

// gvisorCPU: the CPU quota is on the host cgroup of gVisor's sandbox; inside,
// gVisor shows the host's CPUs whatever the quota.
func gvisorCPU(p probeOutput, want float64) Check {
	return warn(AreaIsolation, "cpu", fmt.Sprintf("gVisor shows no cgroup: the plan's %g CPU(s) are enforced on the host's cgroup of the sandbox and cannot be seen inside (it shows %s CPUs)",
		want, orNone(p["nproc"])),
		"check cpu.cfs_quota_us (v1) or cpu.max (v2) of the container's cgroup on the engine host")
}

// gvisorPids: the host cgroup's pids limit counts gVisor's own host
// threads and (on the ptrace platform) a stub process per address space,
// not the script's processes one for one.
func gvisorPids(want int64) Check {
	return warn(AreaIsolation, "pids", fmt.Sprintf("gVisor shows no cgroup: the plan's %d pids are a limit on the host's cgroup of the sandbox, which counts gVisor's own threads and stub processes, so the script gets fewer processes than that and a fork past them ends the whole sandbox",
		want),
		"check pids.max of the container's cgroup on the engine host; under gVisor give pids-hungry skills a higher limits.pids")
}
