package docker

import (
	"github.com/sandboxrun/sandboxrun/sandbox"

	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
)

// On an engine whose storage driver is fuse-overlayfs, every file an
// interpreter looks up or opens in the image is a round trip to that
// driver's daemon, and a fresh mount per container starts with its caches
// empty: a Python script's start alone makes a few hundred. A usr volume is
// a copy of one image's /usr, made once by the engine itself (it fills an
// empty volume from the image when the volume is first mounted), and
// mounted read-only over /usr in every sandbox of that image, so those
// files come from a plain directory. With a merged /usr, as Debian has,
// /bin and /lib point into it too.
//
// The copy must be the image's /usr and nothing else, so:
//   - a volume is named by the image's id, and a sandbox that mounts it is
//     created from that id, never from a tag that may since have moved;
//   - a volume is published only once complete: it is filled under a name
//     of its own (the data volume), and then a second, empty volume, the
//     marker, named by the image id, is created with a label naming it. A
//     run uses only a data volume a marker names. Two processes filling at
//     once each fill their own; the marker the engine kept names the
//     winner, and the loser removes its copy;
//   - the sandbox mounts it read-only, as the rest of the image is.

// Labels on usr volumes (both kinds carry LabelManaged).
const (
	// LabelUsrImage is the image id whose /usr the volume holds.
	LabelUsrImage = sandbox.LabelPrefix + "usr-image"
	// LabelUsrData, on a marker, names the complete data volume.
	LabelUsrData = sandbox.LabelPrefix + "usr-data"
)

// usrDir is the image folder a usr volume holds.
const usrDir = "/usr"

// usrDriver is the storage driver under which runs use usr volumes.
const usrDriver = "fuse-overlayfs"

// usrTTL is how long a run reuses what it learnt about a ref (its image
// id, and that image's volume or the lack of one) before asking again; a
// rebuilt image is seen that much later.
const usrTTL = 10 * time.Second

// usrRetry is how long after a failed fill runs go without a volume before
// one tries again.
const usrRetry = 5 * time.Minute

// usrMount is what a run mounts over /usr: nothing when volume is empty.
type usrMount struct {
	imageID string // the image by id; the container is created from it
	volume  string // the data volume
}

// usrDataPrefix starts every data volume's name.
const usrDataPrefix = "sandboxrun-usrdata-"

func usrMarkerName(imageID string) string {
	return "sandboxrun-usr-" + strings.TrimPrefix(imageID, "sha256:")
}

func usrDataName(imageID string) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("name a usr volume: %w", err)
	}
	id := strings.TrimPrefix(imageID, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return usrDataPrefix + id + "-" + hex.EncodeToString(b[:]), nil
}

// usrCache is what a runner knows about refs and image ids.
type usrCache struct {
	mu     sync.Mutex
	refs   map[string]usrRef     // ref -> its image id, learnt at
	images map[string]*usrFilled // image id -> its volume, once known
}

type usrRef struct {
	imageID string
	at      time.Time
}

// usrFilled is one image's volume; done closes once volume (or err) is set.
type usrFilled struct {
	done   chan struct{}
	volume string
	err    error
	at     time.Time
}

// usrFor returns the usr volume a run of ref mounts, filling it first when
// the image has none. It returns no volume, and the run goes on without
// one, when usr volumes do not apply (PrepareUsr), when ref is not an
// image the engine has (the create then says so), or when filling failed
// (logged).
func (d *Runner) usrFor(ctx context.Context, ref string) usrMount {
	if !d.usrApplies(ctx) {
		return usrMount{}
	}
	imageID, err := d.imageIDOf(ctx, ref)
	if err != nil {
		return usrMount{}
	}
	vol, err := d.usrVolumeOf(ctx, imageID)
	if err != nil {
		d.log.Warn("no usr volume: this image's runs read /usr through the storage driver", "image", ref, "error", err)
		return usrMount{}
	}
	return usrMount{imageID: imageID, volume: vol}
}

// PrepareUsr makes sure the image ref has its usr volume, filling it now
// when it has none, so that no run waits for the copy; `images build`
// calls it. It returns the volume's name, or "" when usr volumes do not
// apply: they are off (WithUsrVolumes) or the engine's storage driver is
// not fuse-overlayfs.
func (d *Runner) PrepareUsr(ctx context.Context, ref string) (string, error) {
	if !d.usrApplies(ctx) {
		return "", nil
	}
	imageID, err := d.imageIDOf(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", imageNotFound(ref, err)
		}
		return "", apiError("inspect image "+ref, err)
	}
	return d.usrVolumeOf(ctx, imageID)
}

// usrApplies reports whether runs use usr volumes: they are on and the
// engine's storage driver is fuse-overlayfs.
func (d *Runner) usrApplies(ctx context.Context) bool {
	if !d.usrVolumes {
		return false
	}
	f, err := d.engine.get(ctx, d)
	return err == nil && f.driver == usrDriver
}

// imageIDOf is ref's image id, asked of the engine at most once per usrTTL.
func (d *Runner) imageIDOf(ctx context.Context, ref string) (string, error) {
	c := &d.usr
	now := d.now()
	c.mu.Lock()
	r, ok := c.refs[ref]
	c.mu.Unlock()
	if ok && now.Sub(r.at) < usrTTL {
		return r.imageID, nil
	}
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	img, err := d.client.ImageInspect(cctx, ref)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.refs == nil {
		c.refs = map[string]usrRef{}
	}
	c.refs[ref] = usrRef{imageID: img.ID, at: now}
	c.mu.Unlock()
	return img.ID, nil
}

// usrVolumeOf is imageID's data volume: the one its marker names, else one
// filled now. Runs of one image in this process wait for one fill.
func (d *Runner) usrVolumeOf(ctx context.Context, imageID string) (string, error) {
	c := &d.usr
	c.mu.Lock()
	f, ok := c.images[imageID]
	if ok {
		select {
		case <-f.done:
			// Ask again now and then: the volume may have been removed,
			// and a failed fill is tried again.
			if age := d.now().Sub(f.at); age >= usrTTL && (f.err == nil || age >= usrRetry) {
				ok = false
			}
		default:
		}
	}
	if !ok {
		f = &usrFilled{done: make(chan struct{})}
		if c.images == nil {
			c.images = map[string]*usrFilled{}
		}
		c.images[imageID] = f
		c.mu.Unlock()
		// Not cut short by this caller's context: other runs of the image
		// wait for this fill, and a half-made copy would be thrown away.
		f.volume, f.err = d.findOrFillUsr(context.WithoutCancel(ctx), imageID)
		f.at = d.now()
		close(f.done)
	} else {
		c.mu.Unlock()
	}
	select {
	case <-f.done:
		return f.volume, f.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

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
