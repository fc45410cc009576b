package cow

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// opaqueKey marks a folder of the upper layer that hides what the lower
// one holds under the same name.
const opaqueKey = "trusted.overlay.opaque"

// WriteLayer writes what the run changed (the overlay's upper folder) as
// an OCI layer, for sandbox.ChangeApplier. The sandbox made everything in
// it: each entry is opened through an os.Root,
// without following a last symlink and without blocking on a fifo, and
// checked for its type once open. Fifos, sockets and devices other than
// whiteouts stay behind.
func (v *View) WriteLayer(w io.Writer) error {
	return writeLayer(w, v.Upper())
}

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
