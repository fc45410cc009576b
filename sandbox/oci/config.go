package oci

import (
	"fmt"
	"math"
	"path"
	"slices"
	"time"

	seccomp "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// bundleParams are the per-execution values that do not come from the Spec.
type bundleParams struct {
	uid, gid uint32
	created  time.Time
	owner    sandbox.Owner
	version  string
	// cgroup is the run's cgroup path, under the backend's own parent.
	cgroup string
	// hostsFile is the host file bound read-only at /etc/hosts.
	hostsFile string
	// seccomp is the engine's default profile (defaultSeccomp).
	seccomp *specs.LinuxSeccomp
	// workspace, when set, is the writable workspace's slot in the
	// bundle (workspace.go), bound read-write at /workspace in place of
	// the caller's folder; the run's view is mounted on it later.
	workspace string
}

// ociVersion is the runtime-spec version config.json declares: every
// field used is in 1.0.2, which the runtimes of Debian 12 (runc 1.1, crun
// 1.8) accept; the library's own version (specs.Version) is newer than
// crun takes.
const ociVersion = "1.0.2"

// cpuPeriod is the CFS period the CPU quota is a share of, as the engine
// sets it for --cpus.
const cpuPeriod = 100_000

// bundleConfig is the runtime configuration of one execution: what the
// Docker backend's container gets (sandbox/docker containerConfig), spelled
// out as the engine hands it to runc. It is a pure function of its inputs
// so a golden file pins every security setting.
//
// The command is sandbox-init alone: the job arrives on its stdin.
func bundleConfig(spec *sandbox.Spec, p bundleParams) *specs.Spec {
	l := spec.Limits
	memory, pids := l.MemoryBytes, l.Pids
	quota := int64(math.Round(l.CPUs * cpuPeriod))
	period := uint64(cpuPeriod)
	noOOMKillDisable := false
	return &specs.Spec{
		Version:  ociVersion,
		Hostname: sandbox.Hostname,
		Root:     &specs.Root{Path: rootfsDir, Readonly: true},
		Process: &specs.Process{
			Terminal: false,
			User:     specs.User{UID: p.uid, GID: p.gid},
			Args:     []string{sandbox.InitPath},
			// init's own environment; the script's is complete in the job
			// and inherits nothing from here or from the host.
			Env:             []string{"PATH=" + sandbox.InitPathEnv},
			Cwd:             sandbox.WorkspaceDir,
			Capabilities:    &specs.LinuxCapabilities{},
			NoNewPrivileges: true,
			// Core dumps are off so a crashing script never writes a core
			// file into a writable /workspace.
			Rlimits: []specs.POSIXRlimit{
				{Type: "RLIMIT_CORE", Soft: 0, Hard: 0},
				{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 4096},
			},
		},
		Mounts:      mounts(spec, p),
		Annotations: sandbox.RunLabels(spec, p.owner, p.version, p.created),
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.CgroupNamespace},
				// A new network namespace with no path: the runtime brings up
				// its loopback and adds nothing else.
				{Type: specs.NetworkNamespace},
			},
			CgroupsPath: p.cgroup,
			Resources: &specs.LinuxResources{
				// Every device is denied; the runtime allows its defaults
				// (null, zero, full, random, urandom, tty, ptmx) on top, as
				// for the engine's containers.
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
				Memory: &specs.LinuxMemory{
					Limit: &memory,
					// No swap beyond the memory cap.
					Swap:             &memory,
					DisableOOMKiller: &noOOMKillDisable,
				},
				CPU:  &specs.LinuxCPU{Quota: &quota, Period: &period},
				Pids: &specs.LinuxPids{Limit: &pids},
			},
			MaskedPaths:   slices.Clone(maskedPaths),
			ReadonlyPaths: slices.Clone(readonlyPaths),
			Seccomp:       p.seccomp,
		},
	}
}

// maskedPaths and readonlyPaths are the engine's defaults for a container
// that is not privileged (moby's oci.DefaultSpec): kernel interfaces under
// /proc and /sys a sandbox has no business reading or writing.
var (
	maskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	readonlyPaths = []string{
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
	}
)

// mounts are the engine's default mounts of a container (proc, a tmpfs
// /dev with pts, shm and mqueue, sysfs and the cgroup tree read-only), then
// the sandbox's own: /tmp, the skill, /etc/hosts, the egress socket, the
// workspace.
func mounts(spec *sandbox.Spec, p bundleParams) []specs.Mount {
	m := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", fmt.Sprintf("size=%d", spec.Limits.TmpBytes)}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"ro", "nosuid", "noexec", "nodev"}},
		// noexec as on the Docker backend: it stops binaries and native
		// libraries dropped in /tmp. Packages belong in a skill image.
		{Destination: sandbox.ScratchDir, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"rw", "noexec", "nosuid", "nodev", fmt.Sprintf("size=%d", spec.Limits.TmpBytes), "mode=1777"}},
		bind(spec.SkillDir, sandbox.SkillMount(spec.Skill)),
		bind(p.hostsFile, sandbox.HostsPath),
	}
	if spec.EgressSocket != "" {
		// Connecting to a unix socket needs no write access to the mount.
		m = append(m, bind(spec.EgressSocket, sandbox.EgressSocketPath))
		if spec.EgressCA != "" {
			m = append(m, bind(spec.EgressCA, sandbox.EgressCAPath), bind(spec.EgressCA, sandbox.ImageCABundle))
		}
	}
	switch {
	case p.workspace != "":
		// The slot: the view mounted on it when the run comes reaches the
		// sandbox (rslave), its writes capped by the view's tmpfs; no mount
		// event goes the other way.
		m = append(m, specs.Mount{Destination: sandbox.WorkspaceDir, Type: "bind", Source: p.workspace,
			Options: []string{"rbind", "rw", "nosuid", "nodev", "rslave"}})
	case spec.Workspace != "":
		// The caller's folder is never written through a mount.
		m = append(m, bind(spec.Workspace, sandbox.WorkspaceDir))
	}
	return m
}

// bind is a read-only bind mount of a host path. Not recursive, so mounts
// below the source stay out of the sandbox; rprivate keeps mount events
// from crossing between host and sandbox.
func bind(src, dst string) specs.Mount {
	return specs.Mount{Destination: dst, Type: "bind", Source: src,
		Options: []string{"bind", "ro", "nosuid", "nodev", "rprivate"}}
}

// defaultSeccomp is the engine's default seccomp profile for a process with
// no capability, from the engine's own library: the same filter the Docker
// backend's containers get.
func defaultSeccomp() (*specs.LinuxSeccomp, error) {
	s, err := seccomp.GetDefaultProfile(&specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}})
	if err != nil {
		return nil, fmt.Errorf("load the default seccomp profile: %w", err)
	}
	return s, nil
}

// mountPoints are the destinations of cfg's mounts outside the kernel's own
// file systems: each must exist in the root file system before the runtime
// mounts over it, and files are bound over files.
func mountPoints(cfg *specs.Spec) (dirs, files []string) {
	for _, m := range cfg.Mounts {
		d := path.Clean(m.Destination)
		switch {
		case d == "/proc" || d == "/dev" || d == "/sys" || under(d, "/dev") || under(d, "/sys"):
			continue
		case m.Type == "bind" && slices.Contains(fileBinds, d):
			files = append(files, d)
		default:
			dirs = append(dirs, d)
		}
	}
	return dirs, files
}

// fileBinds are the destinations bound to a file rather than a folder.
var fileBinds = []string{sandbox.HostsPath, sandbox.EgressSocketPath, sandbox.EgressCAPath, sandbox.ImageCABundle}

func under(p, dir string) bool { return len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/' }
