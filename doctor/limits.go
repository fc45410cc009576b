package doctor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/size"
)

// pageSlack is how far a cgroup's memory figure may sit from the promised
// one: the kernel rounds a limit down to whole pages (64 KiB at most).
const pageSlack = 64 << 10

// unlimited parses a cgroup figure; ok is false when it says "no limit"
// (v2 "max", v1's near-MaxInt64) or is not a number.
func cgroupNumber(s string) (n int64, ok bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n >= math.MaxInt64-(1<<20) {
		return 0, false
	}
	return n, true
}

func unreadable(name, what string) Check {
	return warn(AreaIsolation, name, "the sandbox's cgroup does not show its "+what+" limit here",
		"check the limit on the engine host (the container's cgroup); some runtimes hide it")
}

func judgeMemory(p probeOutput, e Expect, gvisor bool) Check {
	want := e.Limits.MemoryBytes
	raw := p["memory_max"]
	if raw == "" && gvisor {
		return gvisorMemory(p, want)
	}
	if raw == "" {
		return unreadable("memory", "memory")
	}
	got, ok := cgroupNumber(raw)
	if !ok {
		return fail(AreaIsolation, "memory", "no memory limit in the cgroup ("+raw+"), the plan promised "+size.Format(want),
			"create sandboxes with a memory limit (the engine host must support the memory cgroup)")
	}
	if got < want-pageSlack || got > want+pageSlack {
		return fail(AreaIsolation, "memory", fmt.Sprintf("cgroup limit %s, the plan promised %s", size.Format(got), size.Format(want)),
			"create sandboxes with the plan's memory limit")
	}
	// Memory and memory+swap are one cap: no swap beyond it.
	if p["cgroup"] == "v2" {
		if s := p["memory_swap_max"]; s != "" && s != "0" {
			return fail(AreaIsolation, "memory", "swap allowed beyond the memory cap (memory.swap.max "+s+")",
				"set memory+swap equal to memory")
		}
	} else {
		sw := p["memsw_max"]
		if sw == "" {
			return warn(AreaIsolation, "memory", size.Format(got)+" as promised, but the kernel does not account swap: a sandbox may swap past it",
				"boot the engine host with swapaccount=1 (cgroup v1), or move to cgroup v2")
		}
		if n, ok := cgroupNumber(sw); !ok || n > got+pageSlack {
			return fail(AreaIsolation, "memory", "swap allowed beyond the memory cap (memory+swap "+sw+")",
				"set memory+swap equal to memory")
		}
	}
	return pass(AreaIsolation, "memory", size.Format(got)+", no swap beyond it, as promised")
}

func judgeCPU(p probeOutput, e Expect, gvisor bool) Check {
	want := e.Limits.CPUs
	f := strings.Fields(p["cpu_max"])
	if len(f) == 0 && gvisor {
		return gvisorCPU(p, want)
	}
	if len(f) != 2 {
		return unreadable("cpu", "CPU")
	}
	period, ok := cgroupNumber(f[1])
	if !ok {
		return unreadable("cpu", "CPU")
	}
	quota, ok := cgroupNumber(f[0])
	if !ok {
		return fail(AreaIsolation, "cpu", fmt.Sprintf("no CPU quota in the cgroup, the plan promised %g CPUs", want),
			"create sandboxes with the plan's CPU limit (NanoCPUs)")
	}
	got := float64(quota) / float64(period)
	if math.Abs(got-want) > 0.01*want {
		return fail(AreaIsolation, "cpu", fmt.Sprintf("cgroup quota %.3g CPUs, the plan promised %g", got, want),
			"create sandboxes with the plan's CPU limit")
	}
	return pass(AreaIsolation, "cpu", fmt.Sprintf("%g CPU(s), as promised", got))
}

func judgePids(p probeOutput, e Expect, gvisor bool) Check {
	raw := p["pids_max"]
	if raw == "" && gvisor {
		return gvisorPids(e.Limits.Pids)
	}
	if raw == "" {
		return unreadable("pids", "pids")
	}
	got, ok := cgroupNumber(raw)
	if !ok && e.PodPids {
		return warn(AreaIsolation, "pids", fmt.Sprintf("no pids limit in the container's cgroup (%s): Kubernetes has no per-pod pids field, so the plan's %d is not enforced; the kubelet's podPidsLimit, which bounds the pod from above where the probe cannot see, is all there is", raw, e.Limits.Pids),
			"set podPidsLimit in the kubelet configuration of sandbox nodes (the test cluster uses 1024)")
	}
	if !ok {
		return fail(AreaIsolation, "pids", fmt.Sprintf("no pids limit in the cgroup (%s), the plan promised %d", raw, e.Limits.Pids),
			"create sandboxes with a pids limit")
	}
	if got != e.Limits.Pids {
		return fail(AreaIsolation, "pids", fmt.Sprintf("cgroup pids limit %d, the plan promised %d", got, e.Limits.Pids),
			"create sandboxes with the plan's pids limit")
	}
	return pass(AreaIsolation, "pids", fmt.Sprintf("%d, as promised", got))
}

// gVisor's sentry reports a fixed, made-up kernel and boots with its name.
const gvisorVersion = "4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016"

// seenRuntime names the kind of kernel the probe ran on.
func seenRuntime(p probeOutput, hostKernel string) string {
	switch {
	case strings.Contains(p["proc_version"], gvisorVersion), strings.Contains(p["dmesg"], "gVisor"):
		return "gvisor"
	case hostKernel != "" && p["kernel"] == hostKernel:
		return "shared"
	case hostKernel != "":
		return "vm"
	}
	return "unknown"
}

func judgeRuntime(p probeOutput, e Expect) Check {
	seen := seenRuntime(p, e.HostKernel)
	wantGVisor := strings.HasPrefix(e.Runtime, "runsc")
	wantVM := strings.HasPrefix(e.Runtime, "kata")
	switch {
	case seen == "gvisor":
		return pass(AreaIsolation, "runtime", "gVisor: a user-space kernel stands between the script and the host's")
	case wantGVisor:
		return fail(AreaIsolation, "runtime", fmt.Sprintf("the policy asks for %s, but the sandbox runs on kernel %s, not gVisor's", e.Runtime, p["kernel"]),
			"register runsc in the engine's daemon.json (make runsc) and check the policy's runtime")
	case seen == "vm":
		return pass(AreaIsolation, "runtime", fmt.Sprintf("a kernel of its own (%s, host %s): a virtual machine", p["kernel"], e.HostKernel))
	case wantVM:
		return fail(AreaIsolation, "runtime", fmt.Sprintf("the policy asks for %s, but the sandbox shares the host kernel %s", e.Runtime, p["kernel"]),
			"register the kata runtime in the engine's daemon.json")
	case seen == "shared":
		return pass(AreaIsolation, "runtime", fmt.Sprintf("runc: shares the host kernel %s (the policy's runtime: runsc gives a user-space kernel)", p["kernel"]))
	}
	return warn(AreaIsolation, "runtime", "kernel "+p["kernel"]+", host kernel unknown: the runtime cannot be told",
		"compare `uname -r` on the engine host")
}

// capNames are the names of the capability bits in a /proc/self/status
// mask, lowest bit first; ok is false when the mask is not hex.
func capNames(mask string) (names []string, ok bool) {
	v, err := strconv.ParseUint(mask, 16, 64)
	if err != nil {
		return nil, false
	}
	for bit := range 64 {
		if v&(1<<bit) == 0 {
			continue
		}
		if bit < len(capTable) {
			names = append(names, capTable[bit])
		} else {
			names = append(names, "cap_"+strconv.Itoa(bit))
		}
	}
	return names, true
}

// capTable names capability bits (linux/capability.h), for the report.
var capTable = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}
