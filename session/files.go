package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/sandboxrun/sandboxrun/fsroot"
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
	defer s.unhold(ss, false, recount)
	ws, err := s.wsDir.OpenRoot(ss.id)
	if err != nil {
		return fmt.Errorf("opening session %q: %w", id, err)
	}
	defer fsroot.CloseRoot(ws)
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
	defer fsroot.CloseRoot(ws)
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
	clean, err := fsroot.CheckPath(p, s.lim.MaxDepth)
	if err != nil {
		return FileInfo{}, err
	}
	var out FileInfo
	err = s.mutate(owner, id, false, func(ss *sess, ws *os.Root) error {
		out, err = putFile(ws, clean, r, s.durable(), func(added int, old int64) (meter, error) {
			if err := s.checkEntries(ss, added); err != nil {
				return nil, err
			}
			return uploadMeter{charger: s.newCharger(ss, old), entries: added}, nil
		})
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

// OpenFile opens the regular file p for reading. A folder, a link (the
// error names its target, which is not followed) or a special file is
// ErrNotFile. The Entry carries the file's SHA256 (one extra read, for the
// ETag).
func (s *Store) OpenFile(owner, id, p string) (io.ReadCloser, Entry, error) {
	clean, err := fsroot.CheckPath(p, s.lim.MaxDepth)
	if err != nil {
		return nil, Entry{}, err
	}
	var (
		f *os.File
		e Entry
	)
	err = s.read(owner, id, func(ws *os.Root) error {
		f, e, err = openFile(ws, clean, true)
		return err
	})
	if err != nil {
		return nil, Entry{}, err // a nil interface, not a nil *os.File in one
	}
	return f, e, nil
}

// DeleteFile removes p: a file, a link (the link, never its target) or a
// folder with everything in it, all resolved inside the workspace.
func (s *Store) DeleteFile(owner, id, p string) error {
	clean, err := fsroot.CheckPath(p, s.lim.MaxDepth)
	if err != nil {
		return err
	}
	return s.mutate(owner, id, true, func(_ *sess, ws *os.Root) error {
		dir, base := path.Split(clean)
		parent, _, err := fsroot.Descend(ws, dir, false)
		if err != nil {
			return err
		}
		defer fsroot.CloseRoot(parent)
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
