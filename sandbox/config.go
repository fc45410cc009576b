package sandbox

import (
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandboxrun/sandboxrun/sandbox/frame"
)

// Paths inside the sandbox (README, "Security model").
const (
	initPath     = "/usr/local/bin/sandbox-init"
	skillsRoot   = "/skills"
	workspaceDir = "/workspace"
	scratchDir   = "/tmp"
	// defaultPath is init's PATH.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// VenvDir is where a skill image keeps the Python environment holding
	// the skill's python_packages. Its bin/ comes first on the script's
	// PATH so python3 is the environment's; in the plain runner image the
	// folder does not exist and the lookup falls through.
	VenvDir    = "/opt/sandboxrun/venv"
	scriptPath = VenvDir + "/bin:" + defaultPath
)

// ulimits are per-process limits. Core dumps are off so a crashing script
// never writes a core file into a writable /workspace.
func ulimits() []*container.Ulimit {
	return []*container.Ulimit{
		{Name: "core", Soft: 0, Hard: 0},
		{Name: "nofile", Soft: 1024, Hard: 4096},
	}
}

// runParams are the per-execution values that do not come from the Spec.
type runParams struct {
	image   string
	user    string // uid:gid, never 0
	created time.Time
	owner   owner
	version string
	// ociRuntime is the engine runtime to use (runsc for gVisor, ...);
	// empty means the engine's default.
	ociRuntime string
	// workspaceVolume, when set, is mounted at /workspace (writable runs).
	workspaceVolume string
}

// skillMount is where the skill folder appears inside the sandbox.
func skillMount(skill string) string { return path.Join(skillsRoot, skill) }

func containerName(runID string) string { return containerNamePrefix + runID }

// containerConfig is the hardened container for one execution. It is a pure
// function of its inputs so golden files can pin every security setting.
//
// The command is not in the container's configuration: sandbox-init is the
// entrypoint and receives the job on stdin after start.
func containerConfig(spec *Spec, p runParams) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:      p.image,
		User:       p.user,
		Entrypoint: []string{initPath},
		// init's own environment; the script's is complete in the job and
		// inherits nothing from here or from the host.
		Env:        []string{"PATH=" + defaultPath},
		WorkingDir: workspaceDir,
		// The job arrives on stdin: attach it, and close it after one
		// attach so init sees EOF when the host finishes writing.
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		Tty:          false,
		Labels:       containerLabels(spec, p.owner, p.version, p.created),
	}

	networkMode := container.NetworkMode("none")
	if spec.Limits.Network {
		networkMode = "bridge"
	}
	// Without a network the engine need not build one: NetworkDisabled
	// skips libnetwork's sandbox (the slowest part of a start, also for
	// NetworkMode none), and runc gives the container a new network
	// namespace with only lo, up, as NetworkMode none does.
	cfg.NetworkDisabled = !spec.Limits.Network
	mounts := []mount.Mount{bindMount(spec.SkillDir, skillMount(spec.Skill), true)}
	mounts = append(mounts, egressMount(spec)...)
	switch {
	case spec.Workspace == "":
	case p.workspaceVolume != "":
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: p.workspaceVolume, Target: workspaceDir})
	default:
		// Writes go only through a capped volume, never a bind mount.
		mounts = append(mounts, bindMount(spec.Workspace, workspaceDir, true))
	}
	noInit, noOOMKillDisable := false, false
	pids := spec.Limits.Pids
	hc := &container.HostConfig{
		Runtime:        p.ociRuntime,
		NetworkMode:    networkMode,
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		AutoRemove:     false, // removed by Run after inspecting for OOM
		LogConfig:      container.LogConfig{Type: "none"},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Privileged:     false,
		IpcMode:        container.IPCModePrivate,
		CgroupnsMode:   container.CgroupnsModePrivate,
		ShmSize:        spec.Limits.TmpBytes,
		// noexec is what Docker applies to a tmpfs by default anyway; it is
		// spelled out so no engine's default decides. It stops binaries and
		// native libraries dropped in /tmp, not an interpreter reading a
		// script from there. Packages belong in a skill image.
		Tmpfs: map[string]string{
			scratchDir: fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,mode=1777", spec.Limits.TmpBytes),
		},
		Mounts: mounts,
		Init:   &noInit, // sandbox-init is PID 1 itself
		Resources: container.Resources{
			Memory:         spec.Limits.MemoryBytes,
			MemorySwap:     spec.Limits.MemoryBytes, // no swap beyond the memory cap
			NanoCPUs:       int64(math.Round(spec.Limits.CPUs * 1e9)),
			PidsLimit:      &pids,
			OomKillDisable: &noOOMKillDisable,
			Ulimits:        ulimits(),
		},
	}
	return cfg, hc
}

// bindMount mounts a host directory. NonRecursive keeps mounts below the
// source out of the sandbox: engines before API 1.44 cannot make them
// read-only, so they must not appear at all. rprivate keeps mount events
// from crossing between host and sandbox.
func bindMount(src, dst string, readOnly bool) mount.Mount {
	return mount.Mount{
		Type:     mount.TypeBind,
		Source:   src,
		Target:   dst,
		ReadOnly: readOnly,
		BindOptions: &mount.BindOptions{
			Propagation:  mount.PropagationRPrivate,
			NonRecursive: true,
		},
	}
}

// jobFor is what sandbox-init receives: the command, its complete
// environment, the arguments for its stdin and the limits init enforces.
func jobFor(spec *Spec, version string, grace time.Duration) frame.Job {
	return frame.Job{
		Argv:      slices.Clone(spec.Argv),
		Env:       scriptEnv(spec, version),
		Dir:       spec.workDir(),
		Stdin:     spec.Stdin,
		TimeoutMS: ceilMS(effectiveTimeout(spec.Limits)),
		GraceMS:   ceilMS(grace),
		OutputCap: spec.Limits.OutputBytes,
		Egress:    egressJob(spec),
	}
}

// envRunID names the run in the script's environment.
const envRunID = "SANDBOXRUN_RUN_ID"

// workDir is where the script starts: Validate allows only the workspace
// and the skill's folder.
func (s *Spec) workDir() string {
	if s.Dir == "" {
		return workspaceDir
	}
	return s.Dir
}

// scriptEnv is the script's whole environment: the variables sandboxrun
// sets, then the caller's in name order. Nothing comes from the host.
func scriptEnv(spec *Spec, version string) []string {
	dir := skillMount(spec.Skill)
	env := []string{
		"SKILL_NAME=" + spec.Skill,
		"SKILL_VERSION=" + spec.SkillVersion,
		"SKILL_BASE_DIR=" + dir,
		"SKILL_DIR=" + dir,
		"SCRIPTS_DIR=" + path.Join(dir, "scripts"),
		"SANDBOXRUN_VERSION=" + version,
		envRunID + "=" + spec.RunID,
		"PATH=" + scriptPath,
		"HOME=" + scratchDir,
		"LANG=C.UTF-8",
	}
	env = append(env, egressEnv(spec)...)
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}
	return env
}

func ceilMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
