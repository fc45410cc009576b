package docker

import (
	"context"
	"sort"

	cerrdefs "github.com/containerd/errdefs"
)

// HostFacts is what the engine says about itself and its host, for
// `sandboxrun doctor`: it judges them, this package only asks.
type HostFacts struct {
	EngineVersion string
	// APIVersion is the version the engine speaks (its ping header).
	APIVersion    string
	KernelVersion string
	OS            string
	// Driver is the storage driver (overlay2, fuse-overlayfs...).
	Driver        string
	CgroupVersion string
	CgroupDriver  string
	// SecurityOptions are the engine's, e.g. "name=seccomp,profile=default",
	// "name=apparmor", "name=selinux".
	SecurityOptions []string
	// Runtimes are the registered engine runtimes, sorted; DefaultRuntime
	// is the one a container gets when none is asked for, and OCIRuntime
	// the one this runner asks for ("" for the default).
	Runtimes       []string
	DefaultRuntime string
	OCIRuntime     string
	// RootDir is where the engine keeps images, containers and volumes.
	RootDir string
	// Warnings are the engine's own (for example missing swap accounting).
	Warnings []string
	// Image is the runner's default image.
	Image ImageFacts
	// UsrVolumes is whether runs mount usr volumes (on, and the driver is
	// fuse-overlayfs); UsrVolume names the default image's, "" when it
	// has none yet.
	UsrVolumes bool
	UsrVolume  string
}

// ImageFacts describe one image as the engine holds it.
type ImageFacts struct {
	Ref     string
	Present bool
	ID      string
	Created string
	Labels  map[string]string
}

// HostFacts asks the engine about itself, its host and the default image.
// Only an unreachable engine or a failed Info is an error; what is missing
// (the image, its usr volume) is a fact.
func (d *Runner) HostFacts(ctx context.Context) (HostFacts, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	ping, err := d.client.Ping(cctx)
	if err != nil {
		return HostFacts{}, apiError("ping the engine", err)
	}
	info, err := d.client.Info(cctx)
	if err != nil {
		return HostFacts{}, apiError("ask the engine about its host", err)
	}
	f := HostFacts{
		EngineVersion:   info.ServerVersion,
		APIVersion:      ping.APIVersion,
		KernelVersion:   info.KernelVersion,
		OS:              info.OperatingSystem,
		Driver:          info.Driver,
		CgroupVersion:   info.CgroupVersion,
		CgroupDriver:    info.CgroupDriver,
		SecurityOptions: info.SecurityOptions,
		DefaultRuntime:  info.DefaultRuntime,
		OCIRuntime:      d.ociRuntime,
		RootDir:         info.DockerRootDir,
		Warnings:        info.Warnings,
		Image:           ImageFacts{Ref: d.image},
		UsrVolumes:      d.usrVolumes && info.Driver == usrDriver,
	}
	for name := range info.Runtimes {
		f.Runtimes = append(f.Runtimes, name)
	}
	sort.Strings(f.Runtimes)
	img, err := d.client.ImageInspect(cctx, d.image)
	switch {
	case cerrdefs.IsNotFound(err):
		return f, nil
	case err != nil:
		return HostFacts{}, apiError("inspect image "+d.image, err)
	}
	f.Image.Present, f.Image.ID, f.Image.Created = true, img.ID, img.Created
	if img.Config != nil {
		f.Image.Labels = img.Config.Labels
	}
	if f.UsrVolumes {
		v, err := d.client.VolumeInspect(cctx, usrMarkerName(img.ID))
		switch {
		case cerrdefs.IsNotFound(err):
		case err != nil:
			return HostFacts{}, apiError("inspect the usr volume of "+d.image, err)
		default:
			f.UsrVolume = v.Labels[LabelUsrData]
		}
	}
	return f, nil
}
