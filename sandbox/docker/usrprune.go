package docker

import (
	"github.com/sandboxrun/sandboxrun/sandbox"

	"context"
	"errors"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
)

// PruneUsr removes the usr volumes no run can use any more: those of an
// image the engine no longer has, and data volumes no marker names that
// are older than a fill can take (left by a process that died filling).
// A volume a container still mounts is refused by the engine and kept.
func (d *Runner) PruneUsr(ctx context.Context, dryRun bool) ([]sandbox.Reaped, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	list, err := d.client.VolumeList(cctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelUsrImage))})
	cancel()
	if err != nil {
		return nil, apiError("list usr volumes", err)
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
		if v.Labels[sandbox.LabelManaged] != "true" {
			continue
		}
		imageID := v.Labels[LabelUsrImage]
		reason := ""
		if _, seen := gone[imageID]; !seen {
			gone[imageID], err = d.imageGone(ctx, imageID)
			if err != nil {
				return out, err
			}
		}
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		switch {
		case gone[imageID]:
			reason = "usr volume of image " + imageID + ", which is gone"
		case v.Labels[LabelUsrData] == "" && !named[v.Name] && !created.IsZero() && now.Sub(created) > usrFillTimeout:
			reason = "usr volume left unfinished"
		default:
			continue
		}
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
