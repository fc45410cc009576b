package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
)

// Tool names of the snapshot tools.
const (
	ToolSnapshot  = "snapshot_workspace"
	ToolRestore   = "restore_workspace"
	ToolSnapshots = "list_snapshots"
)

const (
	descSnapshot = "Save your workspace's files as they are now, before a risky step (a run that rewrites files, a big refactor): " +
		"restore_workspace brings them back exactly. Files only (no processes). Returns the snapshot's id."
	descRestore = "Put your workspace back exactly as a snapshot saved it: files added since are removed, deleted ones come back, changed ones are as they were. " +
		"Give the id snapshot_workspace or list_snapshots returned."
	descSnapshots = "List your workspace's snapshots, oldest first: id, label, when, bytes and files."
)

// SnapshotInput saves the workspace.
type SnapshotInput struct {
	Label *string `json:"label,omitempty" jsonschema:"what to call the snapshot, e.g. before cleanup (at most 256 bytes); null for none"`
}

// RestoreInput restores the workspace.
type RestoreInput struct {
	Snapshot string `json:"snapshot" jsonschema:"the id of a snapshot of this workspace"`
}

// RestoreOutput names the snapshot the workspace now is.
type RestoreOutput struct {
	Restored string `json:"restored"`
}

// ListSnapshotsInput takes nothing.
type ListSnapshotsInput struct{}

// ListSnapshotsOutput lists the workspace's snapshots.
type ListSnapshotsOutput struct {
	Snapshots []sandboxrun.Snapshot `json:"snapshots"`
}

// errNoSnapshots: the server works on a host folder, not a session.
var errNoSnapshots = errors.New("snapshots are kept for a session's workspace; this server works on a host folder (--workspace): keep copies with the file tools or the folder's own version control instead")

func (w *workspaces) snapshot(req *mcpsdk.CallToolRequest, label string) (sandboxrun.Snapshot, error) {
	id, err := w.of(req)
	if err != nil {
		return sandboxrun.Snapshot{}, err
	}
	return w.door.Snapshot(id, label)
}

func (w *workspaces) restore(req *mcpsdk.CallToolRequest, snap string) error {
	id, err := w.of(req)
	if err != nil {
		return err
	}
	_, err = w.door.Restore(id, snap)
	return err
}

func (w *workspaces) snapshots(req *mcpsdk.CallToolRequest) ([]sandboxrun.Snapshot, error) {
	id, err := w.of(req)
	if err != nil {
		return nil, err
	}
	return w.door.Snapshots(id)
}

func (w *folder) snapshot(*mcpsdk.CallToolRequest, string) (sandboxrun.Snapshot, error) {
	return sandboxrun.Snapshot{}, errNoSnapshots
}

func (w *folder) restore(*mcpsdk.CallToolRequest, string) error { return errNoSnapshots }

func (w *folder) snapshots(*mcpsdk.CallToolRequest) ([]sandboxrun.Snapshot, error) {
	return nil, errNoSnapshots
}

func (h *handlers) snapshotWorkspace(_ context.Context, req *mcpsdk.CallToolRequest, in SnapshotInput) (*mcpsdk.CallToolResult, sandboxrun.Snapshot, error) {
	label := ""
	if in.Label != nil {
		label = *in.Label
	}
	snap, err := h.files.snapshot(req, label)
	if err != nil {
		return nil, sandboxrun.Snapshot{}, h.fileError(err)
	}
	return textResult(fmt.Sprintf("saved snapshot %s (%d files, %d bytes); restore_workspace with this id brings them back", snap.ID, snap.Files, snap.Bytes), false), snap, nil
}

func (h *handlers) restoreWorkspace(_ context.Context, req *mcpsdk.CallToolRequest, in RestoreInput) (*mcpsdk.CallToolResult, RestoreOutput, error) {
	if err := h.files.restore(req, in.Snapshot); err != nil {
		return nil, RestoreOutput{}, h.fileError(err)
	}
	return textResult("the workspace is as snapshot "+in.Snapshot+" saved it", false), RestoreOutput{Restored: in.Snapshot}, nil
}

func (h *handlers) listSnapshots(_ context.Context, req *mcpsdk.CallToolRequest, _ ListSnapshotsInput) (*mcpsdk.CallToolResult, ListSnapshotsOutput, error) {
	snaps, err := h.files.snapshots(req)
	if err != nil {
		return nil, ListSnapshotsOutput{}, h.fileError(err)
	}
	var b strings.Builder
	for _, s := range snaps {
		fmt.Fprintf(&b, "%s %s %q (%d files, %d bytes)\n", s.ID, s.CreatedAt.Format("2006-01-02T15:04:05Z"), s.Label, s.Files, s.Bytes)
	}
	if len(snaps) == 0 {
		b.WriteString("No snapshots: snapshot_workspace makes one.")
	}
	return textResult(b.String(), false), ListSnapshotsOutput{Snapshots: nonNil(snaps)}, nil
}
