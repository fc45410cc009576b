package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/cow"
)

// A writable workspace is a copy-on-write view (package cow) bound
// read-write at /workspace: its lower layer is the caller's folder itself,
// never written, its upper layer a tmpfs of the room the run may use, and
// once the script has ended that upper layer goes to Spec.Changes as a
// layer. A run's cost does not grow with the files it leaves alone.
//
// The container binds an empty folder of its bundle, a slot, which is a
// shared mount of its own; the container's bind of it is a slave. When a
// run takes the container (warm or cold), the view is mounted on the slot
// and the mount reaches the container at once, so session runs take warm
// containers like plain runs.
const (
	wsDir    = "ws"     // the view's scratch folder, in the bundle
	wsMerged = "merged" // the slot the view is mounted on, in the bundle
)

// prepareSlot makes the slot and returns it. The bundle's remove unmounts
// it.
func (b *bundle) prepareSlot() (string, error) {
	slot := filepath.Join(b.dir, wsMerged)
	if err := os.Mkdir(slot, 0o755); err != nil { //nolint:gosec // the sandbox user walks into the view mounted here
		return "", fmt.Errorf("workspace slot: %w", err)
	}
	if err := b.mount(slot, slot, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("workspace slot: bind %s: %w", slot, err)
	}
	if err := unix.Mount("", slot, "", unix.MS_SHARED, ""); err != nil {
		return "", fmt.Errorf("workspace slot: share %s: %w", slot, err)
	}
	return slot, nil
}

// mountView mounts spec's workspace view on the slot and returns what the
// workspace held.
func (b *bundle) mountView(spec *sandbox.Spec) (int64, error) {
	facts, err := sandbox.FactsOf(spec)
	if err != nil {
		return 0, err
	}
	b.view, err = cow.Mount(cow.Options{
		Lower: spec.Workspace, Scratch: filepath.Join(b.dir, wsDir), Target: filepath.Join(b.dir, wsMerged),
		Room: facts.Room(spec.Limits.WorkspaceWriteBytes),
		UID:  sandbox.SandboxUID, GID: sandbox.SandboxGID, FromUID: facts.UID, FromGID: facts.GID,
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", sandbox.ErrWorkspace, err)
	}
	return facts.Bytes, nil
}

// handBack gives the run's changes to spec.Changes and returns what it
// changed.
func (b *bundle) handBack(ctx context.Context, spec *sandbox.Spec) ([]sandbox.FileChange, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := b.view.WriteLayer(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	files, err := spec.Changes.ApplyChanges(ctx, pr)
	pr.CloseWithError(errors.New("changes taken")) // an applier that stopped reading
	if werr := <-done; werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("the run's changes to its workspace were not kept: %w", err)
	}
	return files, nil
}
