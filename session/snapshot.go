package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// Snapshot is a session's files at a moment (files only: a session has no
// processes to keep). JSON field names are part of the HTTP interface.
type Snapshot struct {
	ID        string    `json:"id"`
	Session   string    `json:"session"`
	Label     string    `json:"label,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Bytes     int64     `json:"bytes"`
	Files     int       `json:"files"`
}

// maxLabelBytes bounds a snapshot's label.
const maxLabelBytes = 256

func checkLabel(label string) error {
	if len(label) > maxLabelBytes || !utf8.ValidString(label) || strings.ContainsFunc(label, unicode.IsControl) {
		return fmt.Errorf("%w: a snapshot's label is at most %d bytes of UTF-8 without control characters", ErrBadPath, maxLabelBytes)
	}
	return nil
}

// Snapshot saves the session's files as they are now, taking turns with
// runs and uploads. It links the files rather than copying them (fsroot.CloneTree),
// so it costs a walk of the workspace and almost no disk until files
// change. More than Limits.MaxSnapshots is a *LimitError. The snapshot is
// in place (files, then its metadata, both fsynced) when it returns; a
// crash before leaves no trace of it after Open.
func (s *Store) Snapshot(owner, id, label string) (Snapshot, error) {
	if err := checkLabel(label); err != nil {
		return Snapshot{}, err
	}
	var out Snapshot
	err := s.mutate(owner, id, false, func(ss *sess, ws *os.Root) error {
		snaps, err := s.readSnapshots(ss.id)
		if err != nil {
			return err
		}
		if len(snaps) >= s.lim.MaxSnapshots {
			return &LimitError{Limit: LimitSnapshots, Value: int64(s.lim.MaxSnapshots),
				Hint: "delete a snapshot of this session you no longer need, or raise sessions.max_snapshots in the operator policy"}
		}
		dir, err := s.sessionSnaps(ss.id)
		if err != nil {
			return err
		}
		defer fsroot.CloseRoot(dir)
		out = Snapshot{ID: newID(), Session: ss.id, Label: label, CreatedAt: s.opt.now().UTC()}
		stage := randName()
		if err := dir.Mkdir(stage, 0o700); err != nil {
			return fmt.Errorf("snapshot of %q: %w", id, err)
		}
		defer func() { _ = dir.RemoveAll(stage) }()
		to, err := dir.OpenRoot(stage)
		if err == nil {
			out.Bytes, out.Files, err = fsroot.CloneTree(ws, to)
			fsroot.CloseRoot(to)
		}
		if err == nil {
			err = dir.Rename(stage, out.ID)
		}
		if err == nil {
			err = s.writeJSON(dir, out.ID+".json", out)
		}
		if err != nil {
			_ = dir.RemoveAll(out.ID)
			return fmt.Errorf("snapshot of %q: %w", id, err)
		}
		return nil
	})
	return out, err
}

// ListSnapshots returns the session's snapshots, oldest first.
func (s *Store) ListSnapshots(owner, id string) ([]Snapshot, error) {
	var out []Snapshot
	err := s.read(owner, id, func(*os.Root) error {
		var err error
		out, err = s.readSnapshots(id)
		return err
	})
	return out, err
}

// DeleteSnapshot removes one snapshot of the session.
func (s *Store) DeleteSnapshot(owner, id, snap string) error {
	return s.mutate(owner, id, false, func(ss *sess, _ *os.Root) error {
		dir, err := s.snapshotDir(ss.id, snap)
		if err != nil {
			return err
		}
		defer fsroot.CloseRoot(dir)
		// Metadata first: a crash between the two leaves files without
		// metadata, which Open removes.
		if err := dir.Remove(snap + ".json"); err != nil {
			return fmt.Errorf("deleting snapshot %q: %w", snap, err)
		}
		_ = s.syncDir(dir)
		if err := dir.RemoveAll(snap); err != nil {
			return fmt.Errorf("deleting snapshot %q: %w", snap, err)
		}
		s.recountSnapBytes(ss)
		return nil
	})
}

// Restore makes the session's workspace exactly the snapshot snap: files
// added since are gone, deleted ones back, modified ones as they were,
// modes kept. The new tree is linked beside the workspace and exchanged
// with it in one rename (renameat2 RENAME_EXCHANGE), so a reader or a
// crash sees the old tree or the new one, never a mix. It takes turns with
// runs and uploads.
func (s *Store) Restore(owner, id, snap string) (Info, error) {
	err := s.mutate(owner, id, true, func(ss *sess, _ *os.Root) error {
		dir, err := s.snapshotDir(ss.id, snap)
		if err != nil {
			return err
		}
		defer fsroot.CloseRoot(dir)
		from, err := dir.OpenRoot(snap)
		if err != nil {
			return fmt.Errorf("restoring snapshot %q: %w", snap, err)
		}
		defer fsroot.CloseRoot(from)
		stage := randName()
		if err := s.wsDir.Mkdir(stage, fsroot.DirPerm); err != nil {
			return fmt.Errorf("restoring snapshot %q: %w", snap, err)
		}
		defer func() { _ = s.wsDir.RemoveAll(stage) }() // the old tree, once exchanged
		if err := fsroot.ChmodNoFollow(s.wsDir, stage, fsroot.DirPerm|os.ModeDir); err != nil {
			return fmt.Errorf("restoring snapshot %q: %w", snap, err)
		}
		to, err := s.wsDir.OpenRoot(stage)
		if err != nil {
			return fmt.Errorf("restoring snapshot %q: %w", snap, err)
		}
		_, _, err = fsroot.CloneTree(from, to)
		fsroot.CloseRoot(to)
		if err == nil {
			err = fsroot.WithFd(s.wsDir, func(fd int) error {
				return unix.Renameat2(fd, stage, fd, ss.id, unix.RENAME_EXCHANGE)
			})
		}
		if err != nil {
			return fmt.Errorf("restoring snapshot %q: %w", snap, err)
		}
		return s.syncDir(s.wsDir)
	})
	if err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	ss, err := s.lookupLocked(owner, id)
	var info Info
	if err == nil {
		info = s.infoLocked(ss)
	}
	s.mu.Unlock()
	if err == nil {
		s.recountSnapBytes(ss)
	}
	return info, err
}

// sessionSnaps opens (making it) the folder of a session's snapshots.
func (s *Store) sessionSnaps(id string) (*os.Root, error) {
	if err := s.snapDir.Mkdir(id, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("snapshots of %q: %w", id, err)
	}
	return s.snapDir.OpenRoot(id)
}

// snapshotDir opens the folder of session id's snapshots after checking
// that snap is one of them.
func (s *Store) snapshotDir(id, snap string) (*os.Root, error) {
	notFound := fmt.Errorf("%w: %q is no snapshot of session %q (list them with GET /v1/sessions/%s/snapshots)", ErrSnapshotNotFound, fsroot.Shorten(snap), id, id)
	if !validID(snap) {
		return nil, notFound
	}
	dir, err := s.snapDir.OpenRoot(id)
	if err != nil {
		return nil, notFound
	}
	if _, err := dir.Lstat(snap + ".json"); err != nil {
		fsroot.CloseRoot(dir)
		return nil, notFound
	}
	return dir, nil
}

// readSnapshots reads the metadata of a session's snapshots.
func (s *Store) readSnapshots(id string) ([]Snapshot, error) {
	out := []Snapshot{}
	dir, err := s.snapDir.OpenRoot(id)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer fsroot.CloseRoot(dir)
	names, err := fsroot.ReadDirNames(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		snap, ok := strings.CutSuffix(name, ".json")
		if !ok || !validID(snap) {
			continue
		}
		data, err := dir.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var m Snapshot
		if err := json.Unmarshal(data, &m); err != nil || m.ID != snap || m.Session != id {
			continue // Open removes it
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// writeJSON replaces name in dir atomically with v: a temp file, fsync,
// rename, fsync of the folder.
func (s *Store) writeJSON(dir *os.Root, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := randName()
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = s.syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return err
	}
	return s.syncDir(dir)
}

// Fork makes a new session of owner's with the files of its session from,
// as they are now (snap "") or as its snapshot snap holds them. The files
// are linked, not copied (fsroot.CloneTree): a fork of a large session costs a
// walk and almost no disk, and afterwards the two are independent both
// ways, since no writer changes a file in place. The new session counts
// against sessions.max_per_token, and its bytes against
// sessions.max_total_bytes.
func (s *Store) Fork(owner, from, snap string, ttl time.Duration) (Info, error) {
	fill := func(src *os.Root) func(ws *os.Root) (int64, int, error) {
		return func(ws *os.Root) (int64, int, error) { return fsroot.CloneTree(src, ws) }
	}
	if snap != "" {
		var info Info
		err := s.read(owner, from, func(*os.Root) error {
			dir, err := s.snapshotDir(from, snap)
			if err != nil {
				return err
			}
			defer fsroot.CloseRoot(dir)
			src, err := dir.OpenRoot(snap)
			if err != nil {
				return fmt.Errorf("forking snapshot %q: %w", snap, err)
			}
			defer fsroot.CloseRoot(src)
			info, err = s.create(owner, ttl, fill(src))
			return err
		})
		return info, err
	}
	var info Info
	// Holding the source, so no run or upload changes it meanwhile.
	err := s.mutate(owner, from, false, func(_ *sess, ws *os.Root) error {
		var err error
		info, err = s.create(owner, ttl, fill(ws))
		return err
	})
	return info, err
}
