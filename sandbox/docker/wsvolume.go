package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/cow"
)

// A writable workspace is never bind-mounted. The run gets a tmpfs volume of
// the write cap's size (Limits.WorkspaceWriteBytes), the workspace's files
// are sandbox.Copied in before the job starts, and, once the script has ended,
// read back out while sandbox-init holds the container (and so the volume)
// up: what changed goes, as a layer, to the workspace's owner
// (Spec.Changes), which applies it. This package never writes into the
// caller's folder. The script sees ENOSPC past the cap and cannot fill the
// host's disk; the price is a copy each way, and the volume's pages count
// against the run's memory limit as well. Nothing is handed over unless
// the script ran to a report: a refused run, an engine failure or a killed
// sandbox leave the folder as it was.
//
// A workspace whose files alone fill the cap (a session at its quota)
// still runs: its volume holds the files and sandbox.MinFree more, so the script
// reads them, and its writes fail with ENOSPC.

// workspaceVolume is what is behind a writable /workspace: a per-run
// tmpfs volume the files are copied into, or a slot a view is mounted on
// (wsview.go).
type workspaceVolume struct {
	name string // the engine's volume; empty for a slot
	slot string // the host folder bound at /workspace; empty for a volume
	view *cow.View
	// scratch is the view's own folder (cow.Options.Scratch).
	scratch string
	// files is what the workspace's files take (a view's lower layer).
	files int64
	// before are the workspace's entries when sandbox.Copied in, to tell what the
	// script changed.
	before map[string]sandbox.Copied
	// copiedAt is when the copy in began.
	copiedAt time.Time
	// changes are what the hand-back changed in the workspace.
	changes []sandbox.FileChange
}

// handBackTimeout bounds copying a workspace back (sandbox-init holds the
// container for up to ten minutes).
const handBackTimeout = 5 * time.Minute

func workspaceVolumeName(runID string) string { return "sandboxrun-ws-" + runID }

// newWorkspaceVolume makes an empty tmpfs volume of size bytes for the run
// runID, owned by the sandbox user.
func (d *Runner) newWorkspaceVolume(ctx context.Context, runID string, ws wsPlan) (*workspaceVolume, error) {
	if ws.view {
		return d.newSlot(runID)
	}
	size := ws.size
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
	if v.slot != "" {
		return v.removeSlot()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.removeTimeout)
	defer cancel()
	if err := d.client.VolumeRemove(cctx, v.name, true); err != nil && !cerrdefs.IsNotFound(err) {
		return apiError("remove the workspace volume", err)
	}
	return nil
}

// copyIn puts the workspace's files into the started container's volume.
func (d *Runner) copyIn(ctx context.Context, id string, spec *sandbox.Spec, v *workspaceVolume, ws wsPlan) error {
	if v.slot != "" {
		return d.mountView(spec, v, ws)
	}
	v.copiedAt = time.Now()
	if empty, err := emptyDir(spec.Workspace); err == nil && empty {
		// Nothing to copy: the volume is empty already (an engine call
		// saved on every run of a fresh session).
		v.before = map[string]sandbox.Copied{}
		return nil
	}
	pr, pw := io.Pipe()
	entries := make(chan map[string]sandbox.Copied, 1)
	go func() {
		seen, err := sandbox.WriteTree(pw, spec.Workspace, int(d.ids.UID()), int(d.ids.GID()))
		entries <- seen
		pw.CloseWithError(err)
	}()
	err := d.client.CopyToContainer(ctx, id, sandbox.WorkspaceDir, pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errStopped)
	v.before = <-entries
	if err != nil {
		return where.Errorf("%w: copy %s into the sandbox: %w", sandbox.ErrWorkspace, where.Path(spec.Workspace), err)
	}
	return nil
}

// copyOut reads the volume's files back and hands what changed to the
// workspace's owner (Spec.Changes).
func (d *Runner) copyOut(ctx context.Context, id string, spec *sandbox.Spec, v *workspaceVolume) error {
	// The hand-back finishes even when the caller gives up meanwhile: a
	// run's changes lost after it reported are worse than late ones. It is
	// bounded by the cap's size.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handBackTimeout)
	defer cancel()
	if v.view != nil {
		return v.handBackView(cctx, spec)
	}
	rc, _, err := d.client.CopyFromContainer(cctx, id, sandbox.WorkspaceDir+"/.")
	if err != nil {
		return fmt.Errorf("%w: copy the workspace out of the sandbox: %w", sandbox.ErrWorkspace, err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(diffTree(rc, pw, v.before, v.copiedAt)) }()
	v.changes, err = spec.Changes.ApplyChanges(cctx, pr)
	pr.CloseWithError(errStopped)
	if err != nil {
		// The owner refused or failed to apply them (a quota, say): its
		// error says which and what to do.
		return fmt.Errorf("the run's changes to its workspace were not kept: %w", err)
	}
	return nil
}

// emptyDir reports whether the folder dir holds nothing.
func emptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}
