package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// minAPI is the oldest engine API sandboxrun is tested against (Docker
// 20.10).
const minAPI = "1.41"

// judgeDocker turns the engine's answers into host checks. version is
// sandboxrun's, which the runner image should carry.
func judgeDocker(f docker.HostFacts, version string) []Check {
	checks := []Check{
		pass(AreaHost, "engine", fmt.Sprintf("Docker %s on %s, kernel %s", f.EngineVersion, f.OS, f.KernelVersion)),
		judgeAPI(f.APIVersion),
		judgeDriver(f.Driver),
		judgeCgroup(f),
		judgeSeccompOpt(f.SecurityOptions),
		judgeLSM(f.SecurityOptions),
		judgeRuntimes(f),
		judgeImage(f.Image, version),
		judgeUsr(f),
	}
	if len(f.Warnings) > 0 {
		checks = append(checks, warn(AreaHost, "engine_warnings", strings.Join(f.Warnings, "; "),
			"see the engine's documentation for each warning"))
	}
	return checks
}

func judgeAPI(v string) Check {
	if apiBelow(v, minAPI) {
		return warn(AreaHost, "api", "engine API "+v+", older than "+minAPI+" (Docker 20.10), the oldest sandboxrun is tested with",
			"upgrade the engine")
	}
	return pass(AreaHost, "api", "engine API "+v+" (negotiated)")
}

// apiBelow compares two "major.minor" API versions; an unreadable one is
// not below.
func apiBelow(v, min string) bool {
	num := func(s string) (int, int, bool) {
		a, b, ok := strings.Cut(s, ".")
		x, err1 := strconv.Atoi(a)
		y, err2 := strconv.Atoi(b)
		return x, y, ok && err1 == nil && err2 == nil
	}
	x, y, ok1 := num(v)
	mx, my, ok2 := num(min)
	return ok1 && ok2 && (x < mx || (x == mx && y < my))
}

func judgeDriver(d string) Check {
	switch d {
	case "overlay2", "overlayfs":
		return pass(AreaHost, "storage_driver", d+": the fastest driver for sandboxes")
	case "fuse-overlayfs":
		return warn(AreaHost, "storage_driver", "fuse-overlayfs puts a user-space daemon in front of every container's root: about 20-30 % fewer sandboxes/s than overlay2 (README, Speed)",
			"where the host's file system allows it (ext4, xfs), switch the engine to overlay2; until then keep docker.usr_volumes on")
	}
	return warn(AreaHost, "storage_driver", d+": not measured with sandboxrun; overlay2 is the fast, tested driver",
		"where the host's file system allows it (ext4, xfs), switch the engine to overlay2")
}

func judgeCgroup(f docker.HostFacts) Check {
	switch f.CgroupVersion {
	case "2":
		return pass(AreaHost, "cgroup", "v2 ("+f.CgroupDriver+" driver): memory, CPU, pids and swap limits all enforced")
	case "1":
		return pass(AreaHost, "cgroup", "v1 ("+f.CgroupDriver+" driver): limits enforced; v2 also accounts swap by default")
	}
	return warn(AreaHost, "cgroup", "the engine does not say its cgroup version ("+f.CgroupDriver+" driver)",
		"check the limits line of the isolation checks below")
}

// secOpt finds the engine security option named name ("name=seccomp,...").
func secOpt(opts []string, name string) (string, bool) {
	for _, o := range opts {
		if strings.HasPrefix(o, "name="+name+",") || o == "name="+name {
			return o, true
		}
	}
	return "", false
}

func judgeSeccompOpt(opts []string) Check {
	o, ok := secOpt(opts, "seccomp")
	if !ok {
		return fail(AreaHost, "seccomp_support", "the engine has no seccomp support: sandboxes would run without a system call filter",
			"run an engine built with seccomp on a kernel with CONFIG_SECCOMP_FILTER")
	}
	return pass(AreaHost, "seccomp_support", "available ("+strings.TrimPrefix(o, "name=seccomp,")+")")
}

func judgeLSM(opts []string) Check {
	var on []string
	for _, n := range []string{"apparmor", "selinux"} {
		if _, ok := secOpt(opts, n); ok {
			on = append(on, n)
		}
	}
	if len(on) == 0 {
		return warn(AreaHost, "lsm", "neither AppArmor nor SELinux: no mandatory access control behind capabilities and seccomp",
			"enable AppArmor (the engine's docker-default profile) or SELinux on the engine host")
	}
	return pass(AreaHost, "lsm", strings.Join(on, ", ")+" enabled")
}

func judgeRuntimes(f docker.HostFacts) Check {
	have := strings.Join(f.Runtimes, ", ")
	if f.OCIRuntime != "" && !slices.Contains(f.Runtimes, f.OCIRuntime) {
		return fail(AreaHost, "runtimes", fmt.Sprintf("runs ask for %q, but the engine has only %s", f.OCIRuntime, have),
			"register it in the engine's daemon.json (make runsc for gVisor), or change the policy's runtime")
	}
	used := f.OCIRuntime
	if used == "" {
		used = f.DefaultRuntime + " (the engine's default)"
	}
	return pass(AreaHost, "runtimes", "registered: "+have+"; runs use "+used)
}

func judgeImage(img docker.ImageFacts, version string) Check {
	if !img.Present {
		return fail(AreaHost, "runner_image", img.Ref+" is not in the engine", "build it: sandboxrun images build (or make images)")
	}
	built := img.Labels[ocispec.AnnotationVersion]
	rev := img.Labels[ocispec.AnnotationRevision]
	if rev == "" {
		rev = "unknown"
	}
	id := strings.TrimPrefix(img.ID, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	if built != "" && built != version {
		return warn(AreaHost, "runner_image", fmt.Sprintf("%s (%s) was built by sandboxrun %s, this is %s", img.Ref, id, built, version),
			"rebuild it: sandboxrun images build")
	}
	return pass(AreaHost, "runner_image", fmt.Sprintf("%s present (%s, revision %s, built %s)", img.Ref, id, rev, img.Created))
}

func judgeUsr(f docker.HostFacts) Check {
	switch {
	case f.Driver != "fuse-overlayfs":
		return pass(AreaHost, "usr_volumes", "not needed on "+f.Driver)
	case !f.UsrVolumes:
		return warn(AreaHost, "usr_volumes", "off: on fuse-overlayfs every file an interpreter opens goes through the driver's daemon",
			"set docker.usr_volumes: true in the policy (the default)")
	case f.UsrVolume == "":
		return warn(AreaHost, "usr_volumes", "the runner image has no /usr copy yet: the first run waits for it (about 3 s)",
			"sandboxrun images build makes it ahead of time")
	}
	return pass(AreaHost, "usr_volumes", "the runner image's /usr copy is "+f.UsrVolume)
}
