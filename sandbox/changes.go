package sandbox

import (
	"context"
	"io"

	"github.com/sandboxrun/sandboxrun/internal/layer"
)

// ChangeApplier takes a run's changes to its writable workspace and applies
// them to the workspace's owner (a session folder, or the CLI's host
// folder). Backends never write into the caller's folder themselves: they
// bound what the script may write (the write cap), collect what it
// changed, and hand that over here.
//
// The changes come as a layer: a tar stream in the form of an OCI image
// layer. A regular file, folder or symlink that was created or modified is
// an entry with its mode and modification time; a deleted entry is a
// whiteout, ".wh.NAME" in the deleted entry's folder; ".wh..wh..opq" in a
// folder says that everything the folder held before is gone. Names are
// relative to the workspace, slash-separated, and never leave it.
//
// ApplyChanges returns what it changed, for Result.Files. A backend calls
// it at most once per run, and only once the script ran to a report: a
// refused, failed or killed run changes nothing.
type ChangeApplier interface {
	ApplyChanges(ctx context.Context, layer io.Reader) ([]FileChange, error)
}

// The OCI layer's whiteout names (internal/layer writes and reads
// layers).
const (
	WhiteoutPrefix = layer.WhiteoutPrefix
	WhiteoutOpaque = layer.WhiteoutOpaque
)
