package docker

import (
	"fmt"
	"math"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandboxrun/sandboxrun/sandbox"
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
	owner   sandbox.Owner
	version string
	// ociRuntime is the engine runtime to use (runsc for gVisor, ...);
	// empty means the engine's default.
	ociRuntime string
	// workspaceVolume, when set, is mounted at /workspace (writable runs).
	workspaceVolume string
	// workspaceSlot, when set, is the host folder bound at /workspace,
	// where the run's copy-on-write view will be mounted (wsview.go).
	workspaceSlot string
	// usr, when it names a volume, is mounted read-only over /usr, and the
	// container is created from the image id the volume was copied from.
	usr usrMount
	// hostsFile is the host file mounted read-only at /etc/hosts
	// (hostsFile.ensure); empty only where no container is created from
	// the configuration (the warm pool's key).
	hostsFile string
}

// containerNamePrefix starts every container's name, so `docker ps` shows
// at a glance which containers are sandboxes.
const containerNamePrefix = "sandboxrun-"

func containerName(runID string) string { return containerNamePrefix + runID }

// containerConfig is the hardened container for one execution. It is a pure
// function of its inputs so golden files can pin every security setting.
//
// The command is not in the container's configuration: sandbox-init is the
// entrypoint and receives the job on stdin after start.
func containerConfig(spec *sandbox.Spec, p runParams) (*container.Config, *container.HostConfig) {
	image := p.image
	if p.usr.volume != "" {
		image = p.usr.imageID
	}
	cfg := &container.Config{
		Image:      image,
		Hostname:   sandbox.Hostname,
		User:       p.user,
		Entrypoint: []string{sandbox.InitPath},
		// init's own environment; the script's is complete in the job and
		// inherits nothing from here or from the host.
		Env:        []string{"PATH=" + sandbox.InitPathEnv},
		WorkingDir: sandbox.WorkspaceDir,
		// The job arrives on stdin: attach it, and close it after one
		// attach so init sees EOF when the host finishes writing.
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		Tty:          false,
		Labels:       sandbox.RunLabels(spec, p.owner, p.version, p.created),
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
	mounts := []mount.Mount{bindMount(spec.SkillDir, sandbox.SkillMount(spec.Skill), true)}
	if p.hostsFile != "" && !spec.Limits.Network {
		// localhost and the sandbox's name, on loopback only: see
		// hostsFile. With a network the engine writes its own, which also
		// maps the name to the container's address.
		mounts = append(mounts, bindMount(p.hostsFile, sandbox.HostsPath, true))
	}
	mounts = append(mounts, egressMount(spec)...)
	if p.usr.volume != "" {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: p.usr.volume, Target: usrDir, ReadOnly: true,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	switch {
	case spec.Workspace == "":
	case p.workspaceVolume != "":
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: p.workspaceVolume, Target: sandbox.WorkspaceDir})
	case p.workspaceSlot != "":
		// rslave: the view mounted on the slot later reaches the
		// container; nothing mounted inside goes back to the host.
		slot := bindMount(p.workspaceSlot, sandbox.WorkspaceDir, false)
		slot.BindOptions.Propagation = mount.PropagationRSlave
		mounts = append(mounts, slot)
	default:
		// Writes go only through a capped volume, never a bind mount.
		mounts = append(mounts, bindMount(spec.Workspace, sandbox.WorkspaceDir, true))
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
			sandbox.ScratchDir: fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,mode=1777", spec.Limits.TmpBytes),
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

// egressMount is the socket's read-only bind mount: connecting to a unix
// socket needs no write access to the mount. When the proxy goes away, the
// mount keeps pointing at its dead socket, and nothing else can listen there.
func egressMount(spec *sandbox.Spec) []mount.Mount {
	if spec.EgressSocket == "" {
		return nil
	}
	m := []mount.Mount{bindMount(spec.EgressSocket, sandbox.EgressSocketPath, true)}
	if spec.EgressCA != "" {
		m = append(m, bindMount(spec.EgressCA, sandbox.EgressCAPath, true), bindMount(spec.EgressCA, sandbox.ImageCABundle, true))
	}
	return m
}
