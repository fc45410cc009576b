package session

import (
	"context"
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
	"time"
)

// FileInfo is what an upload stored.
type FileInfo struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Entry is one listing row. A symlink is shown, never followed.
type Entry struct {
	Path     string    `json:"path"`             // slash path relative to the workspace
	Type     string    `json:"type"`             // "file", "dir", "symlink"
	Size     int64     `json:"size"`             // bytes of a file; of a link, its target's length
	SHA256   string    `json:"sha256,omitempty"` // files only, hex
	Target   string    `json:"target,omitempty"` // symlinks only
	Modified time.Time `json:"modified"`
}

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// mutate runs fn holding the session's lock (waiting for a run in it, as
// a run waits for an upload), on a handle of its workspace.
func (s *Store) mutate(owner, id string, recount bool, fn func(ss *sess, ws *os.Root) error) error {
	ss, err := s.hold(context.Background(), owner, id)
	if err != nil {
		return err
	}
	defer s.unhold(ss, recount)
	ws, err := s.wsDir.OpenRoot(ss.id)
	if err != nil {
		return fmt.Errorf("opening session %q: %w", id, err)
	}
	defer closeRoot(ws)
	return fn(ss, ws)
}

// read runs fn on a handle of the workspace, without the lock.
func (s *Store) read(owner, id string, fn func(ws *os.Root) error) error {
	s.mu.Lock()
	ss, err := s.lookupLocked(owner, id)
	save := err == nil && s.touchLocked(ss)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if save {
		s.persist(ss)
	}
	ws, err := s.wsDir.OpenRoot(ss.id)
	if err != nil {
		return fmt.Errorf("opening session %q: %w", id, err)
	}
	defer closeRoot(ws)
	return fn(ws)
}

// PutFile stores r at p in the session's workspace: written under a
// reserved temp name, fsynced, then renamed into place, so the path holds
// the old content or the whole new one, never a part. Bytes are charged
// while reading: past the room left (the quota, or the total of all
// sessions) it stops with a *LimitError and leaves nothing. Missing parent
// folders are made (0755); an existing file or link at p is replaced (a
// link itself, never its target); a folder at p, or a file or link among
// the parents, is refused.
func (s *Store) PutFile(owner, id, p string, r io.Reader) (FileInfo, error) {
	clean, err := CheckPath(p, s.lim.MaxDepth)
	if err != nil {
		return FileInfo{}, err
	}
	var out FileInfo
	err = s.mutate(owner, id, false, func(ss *sess, ws *os.Root) error {
		dir, base := path.Split(clean)
		missing, fi, err := probe(ws, clean)
		if err != nil {
			return err
		}
		var old int64
		added := missing
		switch {
		case fi == nil:
			added++
		case fi.IsDir():
			return badPath(clean, "it is a folder: delete it first, or upload to a path inside it")
		case fi.Mode().IsRegular():
			old = fi.Size()
		}
		if err := s.checkEntries(ss, added); err != nil {
			return err
		}
		tmp := randName()
		f, err := openNoFollow(ws, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if err != nil {
			return fmt.Errorf("storing %q: %w", clean, err)
		}
		landed := false
		defer func() {
			if !landed {
				_ = ws.Remove(tmp)
			}
		}()
		c := s.newCharger(ss, old)
		h := sha256.New()
		n, err := c.copy(io.MultiWriter(f, h), r)
		if err == nil {
			err = f.Chmod(filePerm) // whatever the umask
		}
		if err == nil {
			err = s.syncFile(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			c.settle(false, 0, 0)
			return err
		}
		parent, made, err := descend(ws, dir, true)
		if err == nil {
			err = renameAt(ws, tmp, parent, base)
			if err == nil {
				landed = true
				// The new name must survive a crash; the temp name's removal
				// need not (Open removes temp leftovers).
				err = s.syncDir(parent)
			}
			closeRoot(parent)
		}
		if !landed {
			removeMade(ws, made)
			c.settle(false, 0, 0)
			return fmt.Errorf("storing %q: %w", clean, err)
		}
		c.settle(true, n-old, added)
		out = FileInfo{Path: clean, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
		return err
	})
	return out, err
}

// checkEntries refuses adding n entries past MaxFiles.
func (s *Store) checkEntries(ss *sess, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss.entries+n > s.lim.MaxFiles {
		return &LimitError{Limit: LimitMaxFiles, Value: int64(s.lim.MaxFiles),
			Hint: "a session holds at most that many files, folders and links: delete some, or raise sessions.max_files in the operator policy"}
	}
	return nil
}

// removeMade removes folders descend made, deepest first (only if still
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
			return 0, nil, badPath(prefix, "it is %s, not a folder: delete it first or choose another path", describeMode(fi.Mode()))
		}
	}
	return 0, nil, nil
}

// OpenFile opens the regular file p for reading. A folder, a link (the
// error names its target, which is not followed) or a special file is
// ErrNotFile. The Entry carries the file's SHA256 (one extra read, for the
// ETag).
func (s *Store) OpenFile(owner, id, p string) (io.ReadCloser, Entry, error) {
	clean, err := CheckPath(p, s.lim.MaxDepth)
	if err != nil {
		return nil, Entry{}, err
	}
	var (
		f *os.File
		e Entry
	)
	err = s.read(owner, id, func(ws *os.Root) error {
		dir, base := path.Split(clean)
		parent, _, err := descend(ws, dir, false)
		if err != nil {
			return err
		}
		defer closeRoot(parent)
		f, e, err = openRegular(parent, base, clean)
		return err
	})
	if err != nil {
		return nil, Entry{}, err // a nil interface, not a nil *os.File in one
	}
	return f, e, nil
}

// openRegular opens name in parent if it is a regular file, with its hash.
func openRegular(parent *os.Root, name, shown string) (*os.File, Entry, error) {
	fi, err := parent.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, Entry{}, fmt.Errorf("%w: %q", ErrFileNotFound, shown)
	case err != nil:
		return nil, Entry{}, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, Entry{}, linkError(parent, name, shown, ErrNotFile)
	case !fi.Mode().IsRegular():
		return nil, Entry{}, fmt.Errorf("%w: %q is %s", ErrNotFile, shown, describeMode(fi.Mode()))
	}
	f, err := openNoFollow(parent, name, os.O_RDONLY, 0)
	if isELOOP(err) {
		return nil, Entry{}, linkError(parent, name, shown, ErrNotFile)
	}
	if err != nil {
		return nil, Entry{}, err
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || !os.SameFile(fi, st)) {
		err = fmt.Errorf("%w: %q changed while being opened: try again", ErrNotFile, shown)
	}
	var sum string
	if err == nil {
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

// DeleteFile removes p: a file, a link (the link, never its target) or a
// folder with everything in it, all resolved inside the workspace.
func (s *Store) DeleteFile(owner, id, p string) error {
	clean, err := CheckPath(p, s.lim.MaxDepth)
	if err != nil {
		return err
	}
	return s.mutate(owner, id, true, func(_ *sess, ws *os.Root) error {
		dir, base := path.Split(clean)
		parent, _, err := descend(ws, dir, false)
		if err != nil {
			return err
		}
		defer closeRoot(parent)
		fi, err := parent.Lstat(base)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: %q", ErrFileNotFound, clean)
		case err != nil:
			return err
		case fi.IsDir():
			err = parent.RemoveAll(base)
		default:
			err = parent.Remove(base)
		}
		if err != nil {
			return fmt.Errorf("deleting %q: %w", clean, err)
		}
		return s.syncDir(parent)
	})
}
