package session

import (
	"errors"
	"sort"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// deleteWait bounds how long Delete waits for runs in the session to
// release it after their context was cancelled.
var deleteWait = 30 * time.Second

// Delete removes owner's session id: the contexts of runs in it are
// cancelled, Delete waits for them to release (up to 30s; past that the
// folder is removed anyway and the wait is logged), then the metadata and
// the folder are removed.
func (s *Store) Delete(owner, id string) error {
	s.mu.Lock()
	ss, err := s.lookupLocked(owner, id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.unlinkLocked(ss)
	s.mu.Unlock()

	t := time.NewTimer(deleteWait)
	defer t.Stop()
	select {
	case ss.lock <- struct{}{}: // never released: the session is gone
	case <-t.C:
		s.opt.logger.Warn("session deleted while a run still held it", "session_id", id, "waited", deleteWait)
	}
	return s.removeFiles(id)
}

// unlinkLocked takes ss out of the store and wakes everything waiting on it.
func (s *Store) unlinkLocked(ss *sess) {
	ss.deleted = true
	delete(s.sessions, ss.id)
	s.total -= ss.used + ss.snapBytes // pending bytes leave the total when their writers finish
	ss.cancel()
	close(ss.gone)
}

// removeFiles deletes a session from disk, metadata first: a crash between
// the two leaves a folder without metadata, which Open removes.
func (s *Store) removeFiles(id string) error {
	var errs []error
	if err := s.metaDir.Remove(id + ".json"); err != nil && !errors.Is(err, errNotExist) {
		errs = append(errs, err)
	} else if err := s.syncDir(s.metaDir); err != nil {
		errs = append(errs, err)
	}
	if err := s.wsDir.RemoveAll(id); err != nil {
		errs = append(errs, err)
	}
	if err := s.snapDir.RemoveAll(id); err != nil { // its snapshots go with it
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return where.Errorf("removing session %q under %s: %w", id, where.Path(s.root), err)
	}
	return nil
}

// Sweep removes the sessions idle past their TTL, except those a run or an
// upload holds, and returns their ids (sorted). The server calls it
// periodically.
func (s *Store) Sweep() []string {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	now := s.opt.now()
	var ids []string
	for id, ss := range s.sessions {
		if ss.busy || !now.After(ss.expiresAt()) {
			continue
		}
		select {
		case ss.lock <- struct{}{}: // free: take it for good
		default:
			continue
		}
		s.unlinkLocked(ss)
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		if err := s.removeFiles(id); err != nil {
			s.opt.logger.Warn("expired session not fully removed", "session_id", id, "error", err)
		} else {
			s.opt.logger.Info("expired session removed", "session_id", id)
		}
	}
	return ids
}
