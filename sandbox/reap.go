package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// ReapOptions say which leaked containers Reap removes.
type ReapOptions struct {
	// DryRun lists what would be removed without removing anything.
	DryRun bool
	// Grace, when positive, also selects containers older than Grace
	// whatever their owner. Keep it above the longest execution (timeout +
	// grace + backstop margin) and above any warm pool's idle time, so no
	// live run or waiting container is cut.
	Grace time.Duration
	// OnlyDeadOwners selects only containers whose owner process on this
	// host is gone, ignoring Grace: safe to run at every start.
	OnlyDeadOwners bool
	// Host is this host's name as recorded in the labels. Default:
	// os.Hostname(). Owners on other hosts cannot be checked and are
	// selected by age only.
	Host string
}

// Reaped is one container Reap selected.
type Reaped struct {
	ID     string
	Name   string
	RunID  string
	Skill  string
	Age    time.Duration
	Reason string
	// Removed is false in a dry run and when removal failed.
	Removed bool
}

// reapCallTimeout bounds each removal.
const reapCallTimeout = 30 * time.Second

// Reap finds containers labelled as sandboxrun's whose owner process is
// gone (or, with Grace, that are too old) and removes them. Containers
// that disappear meanwhile are not errors; other failures are joined.
func Reap(ctx context.Context, c ReapClient, opts ReapOptions) ([]Reaped, error) {
	if opts.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("reap: host name: %w", err)
		}
		opts.Host = h
	}
	list, err := c.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true")),
	})
	if err != nil {
		return nil, apiError("list sandbox containers", err)
	}
	now := time.Now()
	alive := func(pid int, start uint64) bool { return processAlive("/proc", pid, start) }
	var out []Reaped
	var errs []error
	for _, s := range list {
		r, ok := reapCandidate(s, now, opts, alive)
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
				errs = append(errs, apiError("remove sandbox container "+shortID(s.ID), err))
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// reapCandidate decides about one container; alive reports whether a
// process with that pid (and start time, when known) exists on this host.
func reapCandidate(s container.Summary, now time.Time, opts ReapOptions, alive func(int, uint64) bool) (Reaped, bool) {
	if s.Labels[LabelManaged] != "true" {
		return Reaped{}, false
	}
	created := time.Unix(s.Created, 0)
	if t, err := time.Parse(time.RFC3339, s.Labels[LabelCreated]); err == nil {
		created = t
	}
	r := Reaped{
		ID:    s.ID,
		RunID: s.Labels[LabelRunID],
		Skill: s.Labels[LabelSkill],
		Age:   now.Sub(created).Round(time.Second),
	}
	if len(s.Names) > 0 {
		r.Name = strings.TrimPrefix(s.Names[0], "/")
	}
	pid, err := strconv.Atoi(s.Labels[LabelOwnerPID])
	if err == nil && pid > 0 && s.Labels[LabelOwnerHost] == opts.Host {
		start, _ := strconv.ParseUint(s.Labels[LabelOwnerStart], 10, 64)
		if !alive(pid, start) {
			r.Reason = fmt.Sprintf("owner process %d on %s is gone", pid, opts.Host)
			return r, true
		}
	}
	if !opts.OnlyDeadOwners && opts.Grace > 0 && now.Sub(created) > opts.Grace {
		r.Reason = fmt.Sprintf("older than %s", opts.Grace)
		return r, true
	}
	return Reaped{}, false
}

// processAlive reports whether pid exists under procRoot and, when start is
// known, is the same process (not a later one that reused the pid).
func processAlive(procRoot string, pid int, start uint64) bool {
	got, err := procStartTime(procRoot, pid)
	if err != nil {
		// Unreadable but present still counts as alive: never remove a
		// container whose owner might be running.
		_, serr := os.Stat(procRoot + "/" + strconv.Itoa(pid))
		return serr == nil
	}
	return start == 0 || got == start
}

// Reap removes leaked containers with this runner's client and host name.
func (d *Docker) Reap(ctx context.Context, opts ReapOptions) ([]Reaped, error) {
	if opts.Host == "" {
		opts.Host = d.owner.host
	}
	return Reap(ctx, d.client, opts)
}
