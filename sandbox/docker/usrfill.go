package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Filling and publishing usr volumes (usrvolume.go says why and how).

// findOrFillUsr returns the data volume imageID's marker names, filling
// and publishing one when there is no marker yet.
func (d *Runner) findOrFillUsr(ctx context.Context, imageID string) (string, error) {
	vol, err := d.markedUsr(ctx, imageID)
	switch {
	case err == nil:
		cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
		v, err := d.client.VolumeInspect(cctx, vol)
		cancel()
		switch {
		case err == nil && isUsrCopy(v, imageID):
			return vol, nil
		case err == nil:
			// Not the copy: the engine makes an empty, unlabelled volume
			// when a sandbox mounts a name that was removed meanwhile.
			d.removeVolume(ctx, vol)
		case !cerrdefs.IsNotFound(err):
			return "", apiError("inspect the usr volume", err)
		}
		// The copy is gone: the marker goes too, and a new one is made.
		d.removeVolume(ctx, usrMarkerName(imageID))
	case !cerrdefs.IsNotFound(err):
		return "", err
	}
	began := d.now()
	data, err := d.fillUsr(ctx, imageID)
	if err != nil {
		return "", err
	}
	d.log.Info("copied the image's /usr into its usr volume (once per image)", "image_id", imageID, "volume", data,
		"duration_ms", d.now().Sub(began).Milliseconds())
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	_, err = d.client.VolumeCreate(cctx, volume.CreateOptions{
		Name:   usrMarkerName(imageID),
		Driver: "local",
		Labels: map[string]string{sandbox.LabelManaged: "true", LabelUsrImage: imageID, LabelUsrData: data},
	})
	cancel()
	if err != nil {
		d.removeVolume(ctx, data)
		return "", apiError("publish the usr volume", err)
	}
	// Creating a volume that exists returns the existing one: the marker
	// that stands names the winner.
	won, err := d.markedUsr(ctx, imageID)
	if won != data {
		d.removeVolume(ctx, data)
	}
	return won, err
}

// isUsrCopy reports whether v is a data volume sandboxrun filled from
// imageID.
func isUsrCopy(v volume.Volume, imageID string) bool {
	return v.Labels[sandbox.LabelManaged] == "true" && v.Labels[LabelUsrImage] == imageID && v.Labels[LabelUsrData] == ""
}

// forgetUsr drops what the runner knows about imageID's volume, after a
// sandbox mounting it failed to start: the next run asks the engine again.
func (d *Runner) forgetUsr(imageID string) {
	d.usr.mu.Lock()
	defer d.usr.mu.Unlock()
	if f, ok := d.usr.images[imageID]; ok {
		select {
		case <-f.done:
			delete(d.usr.images, imageID)
		default: // being asked now
		}
	}
}

// markedUsr reads imageID's marker; the error matches NotFound when there
// is none.
func (d *Runner) markedUsr(ctx context.Context, imageID string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	v, err := d.client.VolumeInspect(cctx, usrMarkerName(imageID))
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", err
		}
		return "", apiError("inspect the usr marker", err)
	}
	data := v.Labels[LabelUsrData]
	if v.Labels[LabelUsrImage] != imageID || !strings.HasPrefix(data, usrDataPrefix) {
		return "", fmt.Errorf("volume %s is not a usr marker of image %s: remove it (docker volume rm %s)", v.Name, imageID, v.Name)
	}
	return data, nil
}

// usrFillTimeout bounds copying an image's /usr into its volume.
const usrFillTimeout = 5 * time.Minute

// fillUsr creates a data volume and has the engine copy imageID's /usr
// into it: it does so when an empty volume is mounted over a directory the
// image has. The container that mounts it never starts; it is labelled as
// this process's, so that reaping removes it if this process dies first.
func (d *Runner) fillUsr(ctx context.Context, imageID string) (string, error) {
	data, err := usrDataName(imageID)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, usrFillTimeout)
	defer cancel()
	if _, err := d.client.VolumeCreate(ctx, volume.CreateOptions{
		Name:   data,
		Driver: "local",
		Labels: map[string]string{sandbox.LabelManaged: "true", LabelUsrImage: imageID},
	}); err != nil {
		return "", apiError("create the usr volume", err)
	}
	spec := &sandbox.Spec{RunID: "usr-" + data[len(usrDataPrefix):]}
	cfg := &container.Config{
		Image:           imageID,
		User:            d.ids.User(),
		Entrypoint:      []string{"/usr/bin/true"},
		NetworkDisabled: true,
		Labels:          sandbox.RunLabels(spec, d.owner, d.version, d.now()),
	}
	hc := &container.HostConfig{
		NetworkMode:    "none",
		LogConfig:      container.LogConfig{Type: "none"},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Mounts:         []mount.Mount{{Type: mount.TypeVolume, Source: data, Target: usrDir}},
	}
	created, err := d.client.ContainerCreate(ctx, cfg, hc, nil, nil, containerName(spec.RunID))
	if created.ID != "" {
		if rmErr := d.remove(ctx, created.ID); rmErr != nil && err == nil {
			err = rmErr
		}
	}
	if err != nil {
		d.removeVolume(ctx, data)
		return "", apiError("fill the usr volume", err)
	}
	return data, nil
}

// removeVolume removes a usr volume this process made, logging a failure.
func (d *Runner) removeVolume(ctx context.Context, name string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.callTimeout)
	defer cancel()
	if err := d.client.VolumeRemove(cctx, name, true); err != nil && !cerrdefs.IsNotFound(err) {
		d.log.Warn("remove usr volume", "volume", name, "error", err)
	}
}
