package layer

import (
	"io/fs"
	"os"
	"syscall"
)

// FromRoot writes the entry name of root as it is now: a folder, a
// symlink or a regular file; anything else (a fifo, a socket, a device)
// is left out. The entry is never followed if it is a symlink, a file is
// opened without blocking (a fifo swapped in meanwhile is not waited on)
// and written as open (OpenedFile). It returns the entry's mode as
// first seen, for a caller that has more to say about it (a folder's
// opaque mark).
func (w *Writer) FromRoot(root *os.Root, name string) (fs.FileMode, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return 0, err
	}
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		return mode, w.Dir(name, mode, fi.ModTime())
	case mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		if err != nil {
			return mode, err
		}
		return mode, w.Symlink(name, target, fi.ModTime())
	case mode.IsRegular():
		if !Carries(name) {
			return mode, w.leave(name) // not even opened
		}
		f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return mode, err
		}
		defer f.Close()
		return mode, w.OpenedFile(name, f)
	}
	return mode, nil
}
