package docker

import (
	"github.com/sandboxrun/sandboxrun/sandbox"

	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
)

// A writable workspace is never bind-mounted. The run gets a tmpfs volume of
// the write cap's size (Limits.WorkspaceWriteBytes), the workspace's files
// are copied in before the job starts, and, once the script has ended,
// copied back out while sandbox-init holds the container (and so the
// volume) up. The script sees ENOSPC past the cap and cannot fill the
// host's disk; the price is a copy each way, and the volume's pages count
// against the run's memory limit as well. Nothing lands in the caller's
// folder unless the script ran to a report: a refused run, an engine
// failure or a killed sandbox leave it as it was.

// ErrWorkspaceTooLarge refuses a writable workspace whose files alone fill
// the write cap.
var ErrWorkspaceTooLarge = errors.New("workspace larger than its write cap")

// workspaceVolume is the per-run volume behind a writable /workspace.
type workspaceVolume struct {
	name string
	// before are the workspace's entries when copied in, for mirroring
	// deletions on the way back.
	before map[string]bool
	// copiedAt is when the copy in began.
	copiedAt time.Time
	// changes are what the hand-back changed in the workspace.
	changes []sandbox.FileChange
}

// handBackTimeout bounds copying a workspace back (sandbox-init holds the
// container for up to ten minutes).
const handBackTimeout = 5 * time.Minute

func workspaceVolumeName(runID string) string { return "sandboxrun-ws-" + runID }

// checkWorkspaceFits refuses a writable workspace whose files alone fill
// its write cap.
func checkWorkspaceFits(spec *sandbox.Spec) error {
	limit := spec.Limits.WorkspaceWriteBytes
	size, err := sandbox.TreeSize(spec.Workspace, limit)
	if err != nil {
		return err
	}
	if size >= limit {
		return fmt.Errorf("%w: %s holds %d bytes, and a writable workspace is capped at %d bytes; use a smaller folder, or have the operator raise limits.workspace_write.max", ErrWorkspaceTooLarge, spec.Workspace, size, limit)
	}
	return nil
}

// newWorkspaceVolume makes an empty tmpfs volume of size bytes for the run
// runID, owned by the sandbox user.
func (d *Runner) newWorkspaceVolume(ctx context.Context, runID string, size int64) (*workspaceVolume, error) {
	v := &workspaceVolume{name: workspaceVolumeName(runID)}
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	_, err := d.client.VolumeCreate(cctx, volume.CreateOptions{
		Name:   v.name,
		Driver: "local",
		DriverOpts: map[string]string{
			"type":   "tmpfs",
			"device": "tmpfs",
			"o": "size=" + strconv.FormatInt(size, 10) +
				",uid=" + strconv.FormatUint(uint64(d.ids.UID()), 10) + ",gid=" + strconv.FormatUint(uint64(d.ids.GID()), 10) +
				",mode=0755,nosuid,nodev",
		},
		Labels: d.workspaceVolumeLabels(runID),
	})
	if err != nil {
		return nil, apiError("create the workspace volume", err)
	}
	return v, nil
}

// workspaceVolumeLabels name the run and its owner, so that a reaper can
// remove the volume of an owner killed after its container was removed but
// before the volume was (Reap).
func (d *Runner) workspaceVolumeLabels(runID string) map[string]string {
	l := map[string]string{
		sandbox.LabelManaged:   "true",
		sandbox.LabelRunID:     runID,
		sandbox.LabelOwnerPID:  strconv.Itoa(d.owner.PID),
		sandbox.LabelOwnerHost: d.owner.Host,
	}
	if d.owner.Start != 0 {
		l[sandbox.LabelOwnerStart] = strconv.FormatUint(d.owner.Start, 10)
	}
	return l
}

// removeWorkspaceVolume deletes the volume; the container using it must be
// gone. It runs detached from ctx's cancellation.
func (d *Runner) removeWorkspaceVolume(ctx context.Context, v *workspaceVolume) error {
	if v == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.removeTimeout)
	defer cancel()
	if err := d.client.VolumeRemove(cctx, v.name, true); err != nil && !cerrdefs.IsNotFound(err) {
		return apiError("remove the workspace volume", err)
	}
	return nil
}

// copyIn puts the workspace's files into the started container's volume.
func (d *Runner) copyIn(ctx context.Context, id string, spec *sandbox.Spec, v *workspaceVolume) error {
	v.copiedAt = time.Now()
	pr, pw := io.Pipe()
	entries := make(chan map[string]bool, 1)
	go func() {
		seen, err := sandbox.WriteTree(pw, spec.Workspace, int(d.ids.UID()), int(d.ids.GID()))
		entries <- seen
		pw.CloseWithError(err)
	}()
	err := d.client.CopyToContainer(ctx, id, sandbox.WorkspaceDir, pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errStopped)
	v.before = <-entries
	if err != nil {
		return fmt.Errorf("%w: copy %s into the sandbox: %w", sandbox.ErrWorkspace, spec.Workspace, err)
	}
	return nil
}

// copyOut brings the volume's files back into the workspace.
func (d *Runner) copyOut(ctx context.Context, id string, spec *sandbox.Spec, v *workspaceVolume) error {
	// The hand-back finishes even when the caller gives up meanwhile: half
	// a tree is worse than a late one. It is bounded by the cap's size.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handBackTimeout)
	defer cancel()
	rc, _, err := d.client.CopyFromContainer(cctx, id, sandbox.WorkspaceDir+"/.")
	if err != nil {
		return fmt.Errorf("%w: copy the workspace out of the sandbox: %w", sandbox.ErrWorkspace, err)
	}
	defer rc.Close()
	v.changes, err = readTree(rc, spec.Workspace, v.before, v.copiedAt)
	if err != nil {
		return fmt.Errorf("%w: hand the workspace back to %s: %w", sandbox.ErrWorkspace, spec.Workspace, err)
	}
	return nil
}
