package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stringid"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// reapCallTimeout bounds each removal.
const reapCallTimeout = 30 * time.Second

// Reap finds containers labelled as sandboxrun's whose owner process is
// gone (or, with Grace, that are too old) and removes them. Containers
// that disappear meanwhile are not errors; other failures are joined.
func Reap(ctx context.Context, c ReapClient, opts sandbox.ReapOptions) ([]sandbox.Reaped, error) {
	if opts.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("reap: host name: %w", err)
		}
		opts.Host = h
	}
	list, err := c.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelManaged+"=true")),
	})
	if err != nil {
		return nil, apiError("list sandbox containers", err)
	}
	now := time.Now()
	var out []sandbox.Reaped
	var errs []error
	for _, s := range list {
		r, ok := reapCandidate(s, now, opts, sandbox.ProcessAlive)
		if !ok {
			continue
		}
		if !opts.DryRun {
			cctx, cancel := context.WithTimeout(ctx, reapCallTimeout)
			err := c.ContainerRemove(cctx, s.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			cancel()
			switch {
			case err == nil || ignorableRemoveError(err):
				r.Removed = true
				// A writable run's workspace volume outlives a killed owner.
				if r.RunID != "" {
					vctx, cancel := context.WithTimeout(ctx, reapCallTimeout)
					verr := c.VolumeRemove(vctx, workspaceVolumeName(r.RunID), true)
					cancel()
					if verr != nil && !ignorableRemoveError(verr) {
						errs = append(errs, apiError("remove workspace volume of run "+r.RunID, verr))
					}
				}
			default:
				errs = append(errs, apiError("remove sandbox container "+stringid.TruncateID(s.ID), err))
			}
		}
		out = append(out, r)
	}
	vols, err := reapWorkspaceVolumes(ctx, c, opts)
	return append(out, vols...), errors.Join(append(errs, err)...)
}

// reapWorkspaceVolumes removes the workspace volumes of owners that are
// gone: an owner killed between removing a run's container and removing
// its volume leaves the volume with no container, which the loop over
// containers above never sees. A volume still mounted by a container is
// refused by the engine (a conflict) and kept.
func reapWorkspaceVolumes(ctx context.Context, c ReapClient, opts sandbox.ReapOptions) ([]sandbox.Reaped, error) {
	lctx, cancel := context.WithTimeout(ctx, reapCallTimeout)
	list, err := c.VolumeList(lctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelManaged+"=true"))})
	cancel()
	if err != nil {
		return nil, apiError("list sandbox volumes", err)
	}
	var out []sandbox.Reaped
	var errs []error
	for _, v := range list.Volumes {
		if v == nil {
			continue
		}
		runID := v.Labels[sandbox.LabelRunID]
		if runID == "" || v.Name != workspaceVolumeName(runID) {
			continue
		}
		pid, gone := sandbox.OwnerGone(v.Labels, opts.Host, sandbox.ProcessAlive)
		if !gone {
			continue
		}
		r := sandbox.Reaped{ID: v.Name, Name: v.Name, RunID: runID, Reason: fmt.Sprintf("workspace volume of owner process %d on %s, which is gone", pid, opts.Host)}
		if !opts.DryRun {
			vctx, cancel := context.WithTimeout(ctx, reapCallTimeout)
			verr := c.VolumeRemove(vctx, v.Name, false)
			cancel()
			switch {
			case verr == nil || cerrdefs.IsNotFound(verr):
				r.Removed = true
			case cerrdefs.IsConflict(verr):
				continue // still mounted: its container is reaped with it, or lives
			default:
				errs = append(errs, apiError("remove workspace volume "+v.Name, verr))
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// reapCandidate decides about one container; alive reports whether a
// process with that pid (and start time, when known) exists on this host.
func reapCandidate(s container.Summary, now time.Time, opts sandbox.ReapOptions, alive func(int, uint64) bool) (sandbox.Reaped, bool) {
	if s.Labels[sandbox.LabelManaged] != "true" {
		return sandbox.Reaped{}, false
	}
	created := time.Unix(s.Created, 0)
	if t, err := time.Parse(time.RFC3339, s.Labels[sandbox.LabelCreated]); err == nil {
		created = t
	}
	r := sandbox.Reaped{
		ID:    s.ID,
		RunID: s.Labels[sandbox.LabelRunID],
		Skill: s.Labels[sandbox.LabelSkill],
		Age:   now.Sub(created).Round(time.Second),
	}
	if len(s.Names) > 0 {
		r.Name = strings.TrimPrefix(s.Names[0], "/")
	}
	if pid, gone := sandbox.OwnerGone(s.Labels, opts.Host, alive); gone {
		r.Reason = fmt.Sprintf("owner process %d on %s is gone", pid, opts.Host)
		return r, true
	}
	if !opts.OnlyDeadOwners && opts.Grace > 0 && now.Sub(created) > opts.Grace {
		r.Reason = fmt.Sprintf("older than %s", opts.Grace)
		return r, true
	}
	return sandbox.Reaped{}, false
}

// Reap removes leaked containers with this runner's client and host name
// and, unless opts.OnlyDeadOwners, the usr volumes no run can use any more.
func (d *Runner) Reap(ctx context.Context, opts sandbox.ReapOptions) ([]sandbox.Reaped, error) {
	if opts.Host == "" {
		opts.Host = d.owner.Host
	}
	reaped, err := Reap(ctx, d.client, opts)
	if opts.OnlyDeadOwners || errors.Is(err, ErrUnavailable) {
		return reaped, err
	}
	usr, uerr := d.PruneUsr(ctx, opts.DryRun)
	return append(reaped, usr...), errors.Join(err, uerr)
}
