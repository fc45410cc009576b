package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/fsmode"
)

// The operations here work on a workspace handle, whoever owns it: a
// session of the Store or an operator's Folder. What differs between the
// two (quota and entry accounting, fsync in tests) comes in as arguments,
// so the guards themselves exist once.

// meter accounts one upload's bytes: the Store charges them against its
// quotas while reading, a Folder has none to charge.
type meter interface {
	// copy writes r to w and returns the bytes written; it may stop early
	// with the limit that was reached.
	copy(w io.Writer, r io.Reader) (int64, error)
	// done ends the upload: landed says whether its n bytes are now at the
	// path.
	done(landed bool, n int64)
}

// admitFunc is asked, before anything is written, whether an upload that
// adds entries entries (the file and the folders made for it) and replaces
// a file of old bytes may go ahead; it returns the upload's meter.
type admitFunc func(entries int, old int64) (meter, error)

// putFile stores r at clean (a path CheckPath accepted) in ws: written to
// a reserved temp name at ws's top, fsynced, then renamed into place, so
// the path holds the old content or the whole new one, never a part.
// Missing parent folders are made (0755); an existing file or link at
// clean is replaced (a link itself, never its target); a folder at clean,
// or a file or link among the parents, is refused with a *PathError. A
// failed upload leaves nothing: neither the temp file nor folders it made.
func putFile(ws *os.Root, clean string, r io.Reader, y fsroot.Durability, admit admitFunc) (FileInfo, error) {
	dir, base := path.Split(clean)
	missing, fi, err := probe(ws, clean)
	if err != nil {
		return FileInfo{}, err
	}
	var old int64
	added := missing
	switch {
	case fi == nil:
		added++
	case fi.IsDir():
		return FileInfo{}, badPath(clean, "it is a folder: delete it first, or upload to a path inside it")
	case fi.Mode().IsRegular():
		old = fi.Size()
	}
	m, err := admit(added, old)
	if err != nil {
		return FileInfo{}, err
	}
	tmp := randName()
	f, err := fsroot.OpenNoFollow(ws, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fsroot.FilePerm)
	if err != nil {
		m.done(false, 0)
		return FileInfo{}, fmt.Errorf("storing %q: %w", clean, err)
	}
	landed := false
	defer func() {
		if !landed {
			_ = ws.Remove(tmp)
		}
	}()
	h := sha256.New()
	n, err := m.copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Chmod(fsroot.FilePerm) // whatever the umask
	}
	if err == nil {
		err = y.File(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		m.done(false, 0)
		return FileInfo{}, err
	}
	parent, made, err := fsroot.Descend(ws, dir, true)
	if err == nil {
		err = fsroot.RenameAt(ws, tmp, parent, base)
		if err == nil {
			landed = true
			// The new name must survive a crash; the temp name's removal
			// need not (a store's Open removes temp leftovers, and listings
			// never show them).
			err = y.Dir(parent)
		}
		fsroot.CloseRoot(parent)
	}
	if !landed {
		removeMade(ws, made)
		m.done(false, 0)
		return FileInfo{}, fmt.Errorf("storing %q: %w", clean, err)
	}
	m.done(true, n)
	return FileInfo{Path: clean, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

// removeMade removes folders fsroot.Descend made, deepest first (only if still
// empty).
func removeMade(ws *os.Root, made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		_ = ws.Remove(made[i])
	}
}

// probe looks at p without following links: it returns how many of p's
// parent folders are missing, and p's Lstat (nil when missing). A link or
// a non-folder among the parents is a *PathError.
func probe(ws *os.Root, p string) (int, fs.FileInfo, error) {
	elems := strings.Split(p, "/")
	for i := range elems {
		prefix := strings.Join(elems[:i+1], "/")
		fi, err := ws.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return len(elems) - 1 - i, nil, nil
		}
		if err != nil {
			return 0, nil, fmt.Errorf("looking at %q: %w", prefix, err)
		}
		if i == len(elems)-1 {
			return 0, fi, nil
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := ws.Readlink(prefix)
			return 0, nil, badPath(prefix, "it is a symlink to %q, and the file API never follows links: delete the link, or use the real folder's path", target)
		case !fi.IsDir():
			return 0, nil, badPath(prefix, "it is %s, not a folder: delete it first or choose another path", fsmode.Describe(fi.Mode()))
		}
	}
	return 0, nil, nil
}

// openFile opens the regular file clean (a path CheckPath accepted) in ws
// for reading, every folder on the way opened without following links. A
// folder, a link (the error names its target, which is not followed) or a
// special file is ErrNotFile. With hash, the Entry carries the file's
// SHA256 (one extra read of the whole file).
func openFile(ws *os.Root, clean string, hash bool) (*os.File, Entry, error) {
	dir, base := path.Split(clean)
	parent, _, err := fsroot.Descend(ws, dir, false)
	if err != nil {
		return nil, Entry{}, err
	}
	defer fsroot.CloseRoot(parent)
	return openRegular(parent, base, clean, hash)
}

// openRegular opens name in parent if it is a regular file, with its hash
// when asked for.
func openRegular(parent *os.Root, name, shown string, hash bool) (*os.File, Entry, error) {
	fi, err := parent.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, Entry{}, fmt.Errorf("%w: %q", ErrFileNotFound, shown)
	case err != nil:
		return nil, Entry{}, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, Entry{}, fsroot.LinkError(parent, name, shown, ErrNotFile)
	case !fi.Mode().IsRegular():
		return nil, Entry{}, fmt.Errorf("%w: %q is %s", ErrNotFile, shown, fsmode.Describe(fi.Mode()))
	}
	f, err := fsroot.OpenNoFollow(parent, name, os.O_RDONLY, 0)
	if fsroot.IsELOOP(err) {
		return nil, Entry{}, fsroot.LinkError(parent, name, shown, ErrNotFile)
	}
	if err != nil {
		return nil, Entry{}, err
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || !os.SameFile(fi, st)) {
		err = fmt.Errorf("%w: %q changed while being opened: try again", ErrNotFile, shown)
	}
	var sum string
	if err == nil && hash {
		h := sha256.New()
		if _, err = io.Copy(h, f); err == nil {
			sum = hex.EncodeToString(h.Sum(nil))
			_, err = f.Seek(0, io.SeekStart)
		}
	}
	if err != nil {
		f.Close()
		return nil, Entry{}, err
	}
	return f, Entry{Path: shown, Type: TypeFile, Size: st.Size(), SHA256: sum, Modified: st.ModTime()}, nil
}
