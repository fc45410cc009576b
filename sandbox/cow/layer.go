package cow

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/layer"
)

// opaqueKey marks a folder of the upper layer that hides what the lower
// one holds under the same name.
const opaqueKey = "trusted.overlay.opaque"

// WriteLayer writes what the run changed (the overlay's upper folder) as
// an OCI layer, for sandbox.ChangeApplier. The sandbox made everything in
// it: each entry is read through an os.Root by layer.Writer.FromRoot.
// What is overlay's own is translated here: a 0/0 character device is a
// whiteout, a folder with the opaque xattr gets an opaque marker. Fifos,
// sockets and other devices stay behind.
func (v *View) WriteLayer(w io.Writer) error {
	return writeLayer(w, v.Upper())
}

func writeLayer(w io.Writer, upper string) error {
	root, err := os.OpenRoot(upper)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	lw := layer.NewWriter(w)
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		return layerEntry(lw, root, name, d)
	})
	if err != nil {
		return fmt.Errorf("read the workspace's changes: %w", err)
	}
	return lw.Close()
}

func layerEntry(lw *layer.Writer, root *os.Root, name string, d fs.DirEntry) error {
	if d.Type()&fs.ModeCharDevice != 0 {
		fi, err := root.Lstat(name)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0 {
			return lw.Whiteout(name)
		}
		return nil
	}
	mode, err := lw.FromRoot(root, name)
	if err != nil || !mode.IsDir() {
		return err
	}
	if o, err := opaque(root, name); err != nil || !o {
		return err
	}
	return lw.Opaque(name)
}

// opaque reports whether overlay marked the folder name opaque.
func opaque(root *os.Root, name string) (bool, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_DIRECTORY, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	v := make([]byte, 1)
	n, _ := unix.Fgetxattr(int(f.Fd()), opaqueKey, v) // absent: not opaque
	return n == 1 && v[0] == 'y', nil
}
