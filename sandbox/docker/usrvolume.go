package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandboxrun/sandboxrun/sandbox"
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
