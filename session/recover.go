package session

import (
	"io/fs"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

var errNotExist = fs.ErrNotExist

// recover loads the sessions from disk after a clean stop or a crash.
func (s *Store) recover() error {
	log := s.opt.logger
	now := s.opt.now()
	names, err := fsroot.ReadDirNames(s.metaDir)
	if err != nil {
		return err
	}
	for _, name := range names {
		switch {
		case name == "lock":
		case strings.Contains(name, metaTempMark):
			log.Info("removing interrupted metadata write", "file", name)
			_ = s.metaDir.Remove(name)
		case strings.HasSuffix(name, ".json"):
			s.load(name, now)
		default:
			log.Warn("unknown file in the sessions metadata folder, left alone", "file", name)
		}
	}
	names, err = fsroot.ReadDirNames(s.wsDir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, ok := s.sessions[name]; !ok {
			log.Warn("removing session folder without valid metadata", "session_id", name)
			if err := s.wsDir.RemoveAll(name); err != nil {
				log.Warn("session folder not removed", "session_id", name, "error", err)
			}
		}
	}
	return s.recoverSnapshots()
}

// recoverSnapshots removes the snapshots of sessions that are gone, and
// what an interrupted snapshot or deletion left: a staging folder, files
// without metadata, metadata without files. It counts what the snapshots
// alone hold.
func (s *Store) recoverSnapshots() error {
	log := s.opt.logger
	names, err := fsroot.ReadDirNames(s.snapDir)
	if err != nil {
		return err
	}
	for _, id := range names {
		ss, ok := s.sessions[id]
		if !ok {
			log.Info("removing snapshots of a session that is gone", "session_id", id)
			_ = s.snapDir.RemoveAll(id)
			continue
		}
		dir, err := s.snapDir.OpenRoot(id)
		if err != nil {
			continue
		}
		kept := map[string]bool{}
		snaps, err := s.readSnapshots(id)
		if err == nil {
			for _, m := range snaps {
				if fi, err := dir.Lstat(m.ID); err == nil && fi.IsDir() {
					kept[m.ID], kept[m.ID+".json"] = true, true
				}
			}
		}
		entries, _ := fsroot.ReadDirNames(dir)
		for _, name := range entries {
			if !kept[name] {
				log.Info("removing an interrupted snapshot", "session_id", id, "name", name)
				_ = dir.RemoveAll(name)
			}
		}
		if !allOurs(dir) {
			s.foreign = true
		}
		fsroot.CloseRoot(dir)
		s.recountSnapBytes(ss)
	}
	return nil
}

// load restores one session from its metadata file, or removes what is
// left of it.
func (s *Store) load(name string, now time.Time) {
	log := s.opt.logger
	id := strings.TrimSuffix(name, ".json")
	m, err := readMeta(s.metaDir, name)
	if err != nil {
		log.Warn("removing session with unreadable metadata", "file", name, "error", err)
		_ = s.metaDir.Remove(name)
		if validID(id) {
			_ = s.wsDir.RemoveAll(id)
		}
		return
	}
	if now.After(m.LastUsed.Add(m.TTL)) {
		log.Info("removing expired session", "session_id", id)
		if err := s.removeFiles(id); err != nil {
			log.Warn("expired session not fully removed", "session_id", id, "error", err)
		}
		return
	}
	if fi, err := s.wsDir.Lstat(id); err != nil || !fi.IsDir() {
		log.Warn("removing session whose folder is missing", "session_id", id)
		_ = s.metaDir.Remove(name)
		return
	}
	ss := newSess(m.ID, m.Owner, m.CreatedAt, m.LastUsed, m.TTL)
	ss.savedUsed = m.LastUsed
	used, entries, err := s.usage(id, true)
	if err != nil {
		log.Warn("session usage not recounted", "session_id", id, "error", err)
		used = m.BytesUsed
	}
	ss.used, ss.entries = used, entries
	s.total += used
	s.sessions[id] = ss
	if used != m.BytesUsed {
		s.persistLocked(ss)
	}
}

// usage walks a workspace without following links and returns the bytes
// of its regular files and its number of entries. With clean, entries with
// the reserved temp names are removed on the way; only callers that know
// no upload is in flight in the session may ask (Open, and a holder of the
// session's lock). Without, they are counted, so that they cannot hide
// bytes from the quota.
func (s *Store) usage(id string, clean bool) (int64, int, error) {
	r, err := s.wsDir.OpenRoot(id)
	if err != nil {
		return 0, 0, err
	}
	defer fsroot.CloseRoot(r)
	var (
		bytes   int64
		entries int
	)
	err = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case p == ".":
			return err
		case err != nil:
			return nil // unreadable: counted as far as it could be read
		case fsroot.IsTemp(d.Name()) && clean:
			s.opt.logger.Info("removing interrupted upload", "session_id", id, "path", p)
			if err := r.RemoveAll(p); err != nil {
				s.opt.logger.Warn("interrupted upload not removed", "session_id", id, "path", p, "error", err)
			}
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		entries++
		fi, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // gone meanwhile
		}
		if d.Type().IsRegular() {
			bytes += fi.Size()
		}
		if !ours(fi) {
			s.mu.Lock()
			s.foreign = true
			s.mu.Unlock()
		}
		return nil
	})
	return bytes, entries, err
}
