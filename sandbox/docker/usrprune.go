package docker

import (
	"context"
	"errors"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// PruneUsr removes the usr volumes no run can use any more: those of an
// image the engine no longer has, data volumes no marker names that are
// older than a fill can take (left by a process that died filling), and
// the empty volumes the engine makes in place of a removed copy.
// A volume a container still mounts is refused by the engine and kept.
func (d *Runner) PruneUsr(ctx context.Context, dryRun bool) ([]sandbox.Reaped, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	list, err := d.client.VolumeList(cctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelUsrImage))})
	if err != nil {
		return nil, apiError("list usr volumes", err)
	}
	// A sandbox that mounts a copy removed meanwhile has the engine make
	// an empty volume of that name, without labels.
	byName, err := d.client.VolumeList(cctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("name", usrDataPrefix))})
	if err != nil {
		return nil, apiError("list usr volumes", err)
	}
	for _, v := range byName.Volumes {
		if strings.HasPrefix(v.Name, usrDataPrefix) && len(v.Labels) == 0 {
			list.Volumes = append(list.Volumes, v)
		}
	}
	named := map[string]bool{}
	for _, v := range list.Volumes {
		if data := v.Labels[LabelUsrData]; data != "" {
			named[data] = true
		}
	}
	gone := map[string]bool{}
	now := d.now()
	var out []sandbox.Reaped
	var errs []error
	for _, v := range list.Volumes {
		reason, err := d.usrStale(ctx, v, named, gone, now)
		if err != nil {
			return out, err
		}
		if reason == "" {
			continue
		}
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		r := sandbox.Reaped{ID: v.Name, Name: v.Name, Reason: reason}
		if !created.IsZero() {
			r.Age = now.Sub(created).Round(time.Second)
		}
		if !dryRun {
			rctx, cancel := context.WithTimeout(ctx, reapCallTimeout)
			err := d.client.VolumeRemove(rctx, v.Name, false)
			cancel()
			switch {
			case err == nil || cerrdefs.IsNotFound(err):
				r.Removed = true
			case cerrdefs.IsConflict(err): // in use: kept for now
			default:
				errs = append(errs, apiError("remove usr volume "+v.Name, err))
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// usrStale says why no run can use v any more, or "" when one may. gone
// caches imageGone per image id.
func (d *Runner) usrStale(ctx context.Context, v *volume.Volume, named, gone map[string]bool, now time.Time) (string, error) {
	if len(v.Labels) == 0 {
		return "empty volume the engine made for a removed usr volume", nil
	}
	if v.Labels[sandbox.LabelManaged] != "true" {
		return "", nil
	}
	imageID := v.Labels[LabelUsrImage]
	isGone, seen := gone[imageID]
	if !seen {
		var err error
		if isGone, err = d.imageGone(ctx, imageID); err != nil {
			return "", err
		}
		gone[imageID] = isGone
	}
	if isGone {
		return "usr volume of image " + imageID + ", which is gone", nil
	}
	created, _ := time.Parse(time.RFC3339, v.CreatedAt)
	if v.Labels[LabelUsrData] == "" && !named[v.Name] && !created.IsZero() && now.Sub(created) > usrFillTimeout {
		return "usr volume left unfinished", nil
	}
	return "", nil
}

// imageGone reports whether the engine no longer has the image.
func (d *Runner) imageGone(ctx context.Context, imageID string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	_, err := d.client.ImageInspect(cctx, imageID)
	if cerrdefs.IsNotFound(err) {
		return true, nil
	}
	return false, apiError("inspect image "+imageID, err)
}
