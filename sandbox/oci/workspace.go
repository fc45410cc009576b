package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// A writable workspace is an overlay in the bundle, bound read-write at
// /workspace: its lower layer is a copy of the caller's folder owned by
// the sandbox user (the caller's files are never written, and are never
// the sandbox user's), its upper layer lives on a tmpfs of the write cap,
// so the run's writes are bounded by construction, and once the script
// has ended that upper layer is the change list: it goes to Spec.Changes
// as a layer, overlay whiteouts as OCI whiteouts.
const (
	wsDir     = "ws"
	wsLower   = "lower"
	wsTmpfs   = "up"
	wsUpper   = "up/upper"
	wsWork    = "up/work"
	wsMerged  = "merged"
	opaqueKey = "trusted.overlay.opaque"
)

// prepareWorkspace copies spec's workspace into the bundle and mounts the
// overlay; it returns what to bind at /workspace. Every mount is recorded
// in b, which unmounts it.
func (b *bundle) prepareWorkspace(ctx context.Context, spec *sandbox.Spec) (string, error) {
	ws := filepath.Join(b.dir, wsDir)
	lower, up := filepath.Join(ws, wsLower), filepath.Join(ws, wsTmpfs)
	for _, d := range []string{lower, up, filepath.Join(ws, wsMerged)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("workspace: %w", err)
		}
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := sandbox.WriteTree(pw, spec.Workspace, sandbox.SandboxUID, sandbox.SandboxGID)
		pw.CloseWithError(err)
	}()
	err := untar(ctx, pr, lower)
	pr.CloseWithError(errors.New("copy ended")) // a writer still going stops
	if err != nil {
		return "", fmt.Errorf("%w: copy the workspace for the sandbox: %w", sandbox.ErrWorkspace, err)
	}
	opts := fmt.Sprintf("size=%d,mode=0700", spec.Limits.WorkspaceWriteBytes)
	if err := b.mount("tmpfs", up, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("workspace write layer: %w", err)
	}
	upper, work := filepath.Join(ws, wsUpper), filepath.Join(ws, wsWork)
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil { //nolint:gosec // the workspace's root, for the sandbox user
			return "", fmt.Errorf("workspace write layer: %w", err)
		}
	}
	// The merged root takes the upper folder's owner: the sandbox user's.
	for _, d := range []string{upper, lower} {
		if err := os.Chown(d, sandbox.SandboxUID, sandbox.SandboxGID); err != nil {
			return "", fmt.Errorf("workspace: %w", err)
		}
	}
	merged := filepath.Join(ws, wsMerged)
	opts = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := b.mount("overlay", merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("workspace overlay: %w", err)
	}
	return merged, nil
}

// handBack gives the run's changes to spec.Changes and returns what it
// changed.
func (b *bundle) handBack(ctx context.Context, spec *sandbox.Spec) ([]sandbox.FileChange, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeLayer(pw, filepath.Join(b.dir, wsDir, wsUpper))
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

// writeLayer writes the overlay's upper folder as an OCI layer. The
// sandbox made everything in it: each entry is opened through an os.Root,
// without following a last symlink and without blocking on a fifo, and
// checked for its type once open. Fifos, sockets and devices other than
// whiteouts stay behind.
func writeLayer(w io.Writer, upper string) error {
	root, err := os.OpenRoot(upper)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	tw := tar.NewWriter(w)
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		return layerEntry(tw, root, name, d)
	})
	if err != nil {
		return fmt.Errorf("read the workspace's changes: %w", err)
	}
	return tw.Close()
}

func layerEntry(tw *tar.Writer, root *os.Root, name string, d fs.DirEntry) error {
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeCharDevice != 0:
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Rdev != 0 {
			return nil
		}
		dir, base := path.Split(name)
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dir + sandbox.WhiteoutPrefix + base, Mode: 0o644})
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		if err != nil {
			return err
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, ModTime: fi.ModTime()})
	case d.IsDir():
		f, err := root.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		opaque := make([]byte, 1)
		n, _ := unix.Fgetxattr(int(f.Fd()), opaqueKey, opaque) // absent: not opaque
		_ = f.Close()
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime()}); err != nil {
			return err
		}
		if n == 1 && opaque[0] == 'y' {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name + "/" + sandbox.WhiteoutOpaque, Mode: 0o644})
		}
		return nil
	case fi.Mode().IsRegular():
		f, err := root.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return err // swapped meanwhile: left behind
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(st.Mode().Perm()), ModTime: st.ModTime(), Size: st.Size()}); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, st.Size())
		return err
	}
	return nil
}
