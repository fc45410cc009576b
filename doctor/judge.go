package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxrun/sandboxrun/policy"
)

// Expect is what the run's plan promised, against which the probe's view
// is judged.
type Expect struct {
	// Limits are the run's effective limits, as its Result reports them.
	Limits policy.Limits
	// Workspace is true when the probe ran with a workspace, writable when
	// WorkspaceWritable.
	Workspace         bool
	WorkspaceWritable bool
	// Runtime is the engine runtime the policy asks for ("" the engine's
	// default); HostKernel is the engine host's kernel release, "" unknown.
	Runtime    string
	HostKernel string
	// PodPids is set on Kubernetes, which has no per-pod pids field: the
	// kubelet's podPidsLimit bounds the pod's cgroup, above the one the
	// probe can see.
	PodPids bool
	// PolicyIsolated is set when the backend proved that an enforced
	// deny-all NetworkPolicy stops a sandbox without network
	// (sandbox/kube IsolationPolicy): it has eth0, filtered.
	PolicyIsolated bool
}

// judge turns the probe's output into isolation checks, in a fixed order.
func judge(p probeOutput, e Expect) []Check {
	gv := seenRuntime(p, e.HostKernel) == "gvisor"
	return []Check{
		judgeUser(p),
		judgeCaps(p),
		judgeNoNewPrivs(p),
		judgeSeccomp(p, gv),
		judgeInterfaces(p, e),
		judgeDNS(p, e),
		judgeRootfs(p),
		judgeSkills(p),
		judgeWorkspace(p, e),
		judgeSockets(p),
		judgeKcore(p),
		judgeProcSys(p, gv),
		judgeFlag(p, "sys_firmware", "sys_firmware", "refused", "/sys/firmware shows nothing",
			"keep the engine's masked paths (no --privileged, no systempaths=unconfined)"),
		judgeMemory(p, e, gv),
		judgeCPU(p, e, gv),
		judgePids(p, e, gv),
		judgeRuntime(p, e),
	}
}

// judgeFlag passes when key reads want.
func judgeFlag(p probeOutput, name, key, want, ok, fix string) Check {
	if got := p[key]; got != want {
		return fail(AreaIsolation, name, fmt.Sprintf("%s is %q, want %q", key, got, want), fix)
	}
	return pass(AreaIsolation, name, ok)
}

// judgeProcSys passes when /proc/sys refuses the write and is mounted
// read-only. gVisor serves /proc/sys from its own kernel, which refuses
// such writes without a read-only mount: there the refusal is the fact.
func judgeProcSys(p probeOutput, gvisor bool) Check {
	if gvisor && p["proc_sys"] == "unprotected" {
		return pass(AreaIsolation, "proc_sys", "/proc/sys refuses writes (gVisor's own /proc, not a read-only mount)")
	}
	return judgeFlag(p, "proc_sys", "proc_sys", "refused", "/proc/sys refuses writes and is mounted read-only",
		"keep /proc/sys read-only (no --privileged, no systempaths=unconfined)")
}

func judgeKcore(p probeOutput) Check {
	if p["kcore"] == "absent" {
		return pass(AreaIsolation, "proc_kcore", "this kernel has no /proc/kcore")
	}
	return judgeFlag(p, "proc_kcore", "kcore", "refused", "/proc/kcore is masked and gives nothing to read",
		"keep the engine's masked paths (no --privileged, no systempaths=unconfined)")
}

func judgeUser(p probeOutput) Check {
	uid, gid := p["uid"], p["gid"]
	if uid == "" || uid == "0" || gid == "" || gid == "0" || slices.Contains(p.list("groups"), "0") {
		return fail(AreaIsolation, "user", fmt.Sprintf("uid %q, gid %q, groups %q: root or unknown", uid, gid, p["groups"]),
			"run sandboxes as an unprivileged user (the runner image's 65532); do not override the image's USER")
	}
	return pass(AreaIsolation, "user", fmt.Sprintf("uid %s, gid %s", uid, gid))
}

func judgeCaps(p probeOutput) Check {
	var held []string
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		names, ok := capNames(p[set])
		switch {
		case set == "CapAmb" && p[set] == "" && isZero(p["CapInh"]) && isZero(p["CapPrm"]):
			// gVisor shows no CapAmb line; the ambient set is always
			// within permitted and inheritable, both seen empty.
		case !ok:
			held = append(held, set+" unreadable ("+p[set]+")")
		case len(names) > 0:
			held = append(held, set+": "+strings.Join(names, ","))
		}
	}
	if len(held) > 0 {
		return fail(AreaIsolation, "capabilities", strings.Join(held, "; "),
			"drop every capability (CapDrop ALL, no CapAdd)")
	}
	return pass(AreaIsolation, "capabilities", "inheritable, permitted, effective, bounding and ambient sets all empty")
}

// isZero reports whether a capability mask reads as the empty set.
func isZero(mask string) bool {
	v, err := strconv.ParseUint(mask, 16, 64)
	return err == nil && v == 0
}

// judgeNoNewPrivs reads /proc/self/status, else (gVisor shows no such line)
// the prctl answer the probe asked for.
func judgeNoNewPrivs(p probeOutput) Check {
	const fix = "the container must be created with no-new-privileges"
	v, how := p["NoNewPrivs"], "NoNewPrivs"
	if v == "" && p["no_new_privs_prctl"] != "" {
		v, how = p["no_new_privs_prctl"], "prctl(PR_GET_NO_NEW_PRIVS)"
	}
	switch {
	case v == "1" && how == "NoNewPrivs":
		return pass(AreaIsolation, "no_new_privs", "set (setuid binaries cannot raise privileges)")
	case v == "1":
		return pass(AreaIsolation, "no_new_privs", "set, as prctl(PR_GET_NO_NEW_PRIVS) answers (/proc/self/status has no NoNewPrivs line here)")
	case v == "":
		return warn(AreaIsolation, "no_new_privs", "neither /proc/self/status nor prctl (no python3 in the image) tells no_new_privs here", fix)
	}
	return fail(AreaIsolation, "no_new_privs", fmt.Sprintf("%s is %q, want \"1\"", how, v), fix)
}

func judgeSeccomp(p probeOutput, gvisor bool) Check {
	switch p["Seccomp"] {
	case "2":
		return pass(AreaIsolation, "seccomp", "filter mode (2)")
	case "1":
		return pass(AreaIsolation, "seccomp", "strict mode (1)")
	case "0":
		if gvisor {
			return gvisorSeccomp()
		}
	}
	return fail(AreaIsolation, "seccomp", fmt.Sprintf("Seccomp is %q: no system call filter", p["Seccomp"]),
		"keep the engine's default seccomp profile (no seccomp=unconfined)")
}

func judgeInterfaces(p probeOutput, e Expect) Check {
	ifs, from := p.list("interfaces"), ""
	if len(ifs) == 0 {
		// gVisor's sysfs has no class/net; /proc/net/dev still names them.
		ifs, from = p.list("interfaces_proc"), " (from /proc/net/dev: /sys/class/net lists nothing here)"
	}
	seen := strings.Join(ifs, ", ")
	switch {
	case len(ifs) == 0:
		return warn(AreaIsolation, "interfaces", "/sys/class/net lists nothing (unreadable here)",
			"check the sandbox's network by hand: only lo is expected")
	case e.Limits.Network && len(ifs) > 1:
		return pass(AreaIsolation, "interfaces", seen+" (the policy gives this run a network)")
	case e.Limits.Network:
		return fail(AreaIsolation, "interfaces", "only "+seen+", though the plan gives this run a network",
			"check the engine's default bridge network")
	case len(ifs) == 1 && ifs[0] == "lo":
		return pass(AreaIsolation, "interfaces", "only lo"+from)
	case e.PolicyIsolated:
		return pass(AreaIsolation, "interfaces", seen+": every connection refused by an enforced deny-all NetworkPolicy, as the backend's probe proved (host check network_isolation)")
	}
	return fail(AreaIsolation, "interfaces", seen+", where the plan gives no network",
		"create sandboxes with no network (NetworkMode none); egress goes through the proxy only")
}

func judgeDNS(p probeOutput, e Expect) Check {
	resolved := p["dns_lookup"] == "resolved"
	switch {
	case e.Limits.Network && resolved:
		return pass(AreaIsolation, "dns", "names resolve (the policy gives this run a network)")
	case e.Limits.Network:
		return warn(AreaIsolation, "dns", "no name resolves, though the plan gives this run a network",
			"check the engine's DNS settings")
	case resolved:
		return fail(AreaIsolation, "dns", "a name resolved, where the plan gives no network",
			"create sandboxes with no network; names resolve only in the egress proxy")
	}
	ns := p["nameservers"]
	if ns == "" {
		ns = "none"
	}
	return pass(AreaIsolation, "dns", "no name resolves (nameservers listed: "+ns+")")
}

// readOnly reports whether the probe found folder key read-only: a write
// refused and its mount read-only (a write refused for want of permission
// alone leaves the folder open to a process that has it). seen says what
// the probe saw.
func readOnly(p probeOutput, key string) (ok bool, seen string) {
	w, m := p[key+"_write"], p[key+"_mount"]
	return w == "no" && m == "ro", fmt.Sprintf("write %s, mount %s", orNone(w), orNone(m))
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func judgeRootfs(p probeOutput) Check {
	root, rs := readOnly(p, "rootfs")
	etc, es := readOnly(p, "etc")
	if !root || !etc {
		return fail(AreaIsolation, "rootfs_read_only", "/: "+rs+"; /etc: "+es,
			"create sandboxes with a read-only root file system")
	}
	return pass(AreaIsolation, "rootfs_read_only", "/ and /etc are mounted read-only and refuse writes")
}

func judgeSkills(p probeOutput) Check {
	if ok, seen := readOnly(p, "skills"); !ok {
		return fail(AreaIsolation, "skills_read_only", "the skill folder: "+seen, "mount the skill folder read-only")
	}
	return pass(AreaIsolation, "skills_read_only", "the skill folder is mounted read-only and refuses writes")
}

func judgeWorkspace(p probeOutput, e Expect) Check {
	ro, seen := readOnly(p, "workspace")
	w := p["workspace_write"]
	switch {
	case !e.Workspace && w == "absent":
		return pass(AreaIsolation, "workspace", "no workspace, as planned")
	case !e.Workspace:
		return fail(AreaIsolation, "workspace", "a /workspace the plan does not give: "+seen, "mount /workspace only when the run names one")
	case e.WorkspaceWritable && w == "yes":
		return pass(AreaIsolation, "workspace", "writable, as the policy allows")
	case e.WorkspaceWritable:
		return fail(AreaIsolation, "workspace", "/workspace refuses writes ("+seen+"), the policy lets this run write it",
			"mount /workspace as the policy's workspace.write says")
	case ro:
		return pass(AreaIsolation, "workspace", "read-only, as the policy says")
	}
	return fail(AreaIsolation, "workspace", "/workspace is not read-only ("+seen+"), the policy says it must be",
		"mount /workspace read-only unless the policy's workspace.write and the skill's Write allow it")
}

func judgeSockets(p probeOutput) Check {
	if s, h := p["engine_sockets"], p["docker_host"]; s != "" || h != "" {
		return fail(AreaIsolation, "engine_socket", fmt.Sprintf("sockets %q, DOCKER_HOST %q", s, h),
			"never mount a container engine's socket into a sandbox")
	}
	return pass(AreaIsolation, "engine_socket", "no container engine socket in reach")
}
