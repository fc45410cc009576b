package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/cow"
)

// A writable workspace is a copy-on-write view (package cow) bound
// read-write at /workspace: its lower layer is the caller's folder itself,
// never written, its upper layer a tmpfs of the room the run may use, and
// once the script has ended that upper layer goes to Spec.Changes as a
// layer. A run's cost does not grow with the files it leaves alone.
const (
	wsDir    = "ws"     // the view's scratch folder, in the bundle
	wsMerged = "merged" // where the view is mounted, in the bundle
)

// prepareWorkspace mounts spec's workspace view in the bundle and returns
// what to bind at /workspace. The bundle's remove unmounts it.
func (b *bundle) prepareWorkspace(spec *sandbox.Spec) (string, error) {
	facts, err := sandbox.MeasureWorkspace(spec.Workspace)
	if err != nil {
		return "", err
	}
	merged := filepath.Join(b.dir, wsMerged)
	if err := os.Mkdir(merged, 0o700); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	b.view, err = cow.Mount(cow.Options{
		Lower: spec.Workspace, Scratch: filepath.Join(b.dir, wsDir), Target: merged,
		Room: facts.Room(spec.Limits.WorkspaceWriteBytes),
		UID:  sandbox.SandboxUID, GID: sandbox.SandboxGID, FromUID: facts.UID, FromGID: facts.GID,
	})
	if err != nil {
		return "", fmt.Errorf("%w: %w", sandbox.ErrWorkspace, err)
	}
	return merged, nil
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
