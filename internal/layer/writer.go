package layer

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// ErrShrank says a file held fewer bytes than its entry said while it was
// copied (a process still writing it).
var ErrShrank = errors.New("a file shrank while it was read")

// WhiteoutMode is the mode of the empty entries that mark a deletion (a
// whiteout, an opaque marker). Their time is always the epoch: they carry
// nothing but their name, so that a layer's bytes depend on the changes
// alone.
const WhiteoutMode = 0o644

// Writer writes a layer. Names are slash paths relative to the
// workspace, without a trailing slash. An entry whose name a layer cannot
// carry (an element beginning with WhiteoutPrefix, which a script may
// well make) is left out and counted; any other invalid name is an error.
// Permission bits are kept; set-id and sticky bits never are.
type Writer struct {
	tw      *tar.Writer
	leftOut int
}

// NewWriter starts a layer on w; Close ends it.
func NewWriter(w io.Writer) *Writer { return &Writer{tw: tar.NewWriter(w)} }

// LeftOut is the number of entries left out for their name.
func (w *Writer) LeftOut() int { return w.leftOut }

// Close writes the layer's end. It does not close the io.Writer under it.
func (w *Writer) Close() error { return w.tw.Close() }

// Dir writes a folder, new or with a changed mode.
func (w *Writer) Dir(name string, perm fs.FileMode, mtime time.Time) error {
	return w.header(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: int64(perm.Perm()), ModTime: mtime})
}

// Symlink writes a symlink to target.
func (w *Writer) Symlink(name, target string, mtime time.Time) error {
	if err := checkTarget(target); err != nil {
		return fmt.Errorf("write %q to a layer: %w", shorten(name), err)
	}
	return w.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: mtime})
}

// File writes a regular file of size bytes, copied from r; an r that
// ends sooner is ErrShrank.
func (w *Writer) File(name string, perm fs.FileMode, mtime time.Time, size int64, r io.Reader) error {
	ok, err := w.start(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(perm.Perm()), ModTime: mtime, Size: size})
	if !ok || err != nil {
		return err
	}
	if _, err := io.CopyN(w.tw, r, size); errors.Is(err, io.EOF) {
		return fmt.Errorf("write %q to a layer: %w", shorten(name), ErrShrank)
	} else if err != nil {
		return err
	}
	return nil
}

// OpenedFile writes the regular file open as f, as it is now: its size,
// mode and time from f itself, so that the entry matches the bytes even
// when the name was swapped before f was opened. Anything but a regular
// file is left out.
func (w *Writer) OpenedFile(name string, f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	return w.File(name, st.Mode(), st.ModTime(), st.Size(), f)
}

// Whiteout writes that the entry name is deleted, with what it held.
func (w *Writer) Whiteout(name string) error {
	if !Carries(name) {
		return w.leave(name)
	}
	return w.mark(whiteoutName(name))
}

// Opaque writes that everything folder dir held before is gone ("" the
// workspace); the layer's entries under dir are what it holds now.
func (w *Writer) Opaque(dir string) error {
	if dir != "" && !Carries(dir) {
		return w.leave(dir)
	}
	return w.mark(opaqueName(dir))
}

func (w *Writer) mark(name string) error {
	return w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: WhiteoutMode, ModTime: time.Unix(0, 0)})
}

func (w *Writer) header(h *tar.Header) error {
	_, err := w.start(h)
	return err
}

// start writes h after checking its name; false: left out.
func (w *Writer) start(h *tar.Header) (bool, error) {
	if err := CheckName(h.Name); errors.Is(err, errWhiteoutName) {
		return false, w.leave(h.Name)
	} else if err != nil {
		return false, fmt.Errorf("write %q to a layer: %w", shorten(h.Name), err)
	}
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	return true, w.tw.WriteHeader(h)
}

func (w *Writer) leave(name string) error {
	if err := CheckName(name); err != nil && !errors.Is(err, errWhiteoutName) {
		return fmt.Errorf("write %q to a layer: %w", shorten(name), err)
	}
	w.leftOut++
	return nil
}
