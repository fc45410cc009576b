package session

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Lease is the right to run in a session's workspace, held from Acquire to
// Release. Runs and file mutations in one session are serialized by it.
type Lease struct {
	// Dir is the workspace folder on the host: what the sandbox mounts at
	// /workspace.
	Dir string
	// Used is the bytes of the workspace's regular files at Acquire.
	Used int64
	// Remaining is what the run's writes may add: the smaller of the
	// session's room under its quota and the room under the total of all
	// sessions. It is not reserved: the run's write cap must enforce it.
	Remaining int64
	// Ctx is cancelled when the session is deleted: a run in it must stop.
	Ctx context.Context
	// Facts are what the store vouches for the workspace's files, for the
	// run's Spec (sandbox.Spec.WorkspaceFacts): Used as their bytes, and
	// one owner, this process, since the store made every entry itself.
	// Nil when it cannot vouch (owners.go): the backend measures the
	// folder.
	Facts *sandbox.WorkspaceFacts

	s        *Store
	ss       *sess
	cancel   context.CancelFunc
	once     sync.Once
	released bool      // guarded by s.mu
	over     *overflow // guarded by s.mu: what ApplyChanges left out
	recount  bool      // guarded by s.mu: ApplyChanges failed half-way
}

// Acquire waits (bounded by ctx) for the session's lock and returns a
// lease on it. It fails with ErrNotFound as every other call does for a
// session that is not owner's, and when the session is deleted while
// waiting.
func (s *Store) Acquire(ctx context.Context, owner, id string) (*Lease, error) {
	ss, err := s.hold(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	used, room := ss.used, s.roomLocked(ss, 0)
	s.mu.Unlock()
	dir := filepath.Join(s.root, "ws", ss.id)
	lctx, cancel := context.WithCancel(ss.ctx)
	return &Lease{Dir: dir, Used: used, Remaining: room, Ctx: lctx, Facts: s.factsOf(dir, used),
		s: s, ss: ss, cancel: cancel}, nil
}

// Release touches the session's last use, persists its metadata and lets
// the next waiter in. The counts are the store's own, kept exact by
// ApplyChanges; only after a change layer that failed half-way is the
// workspace recounted (a walk that follows no link). Calling it again
// does nothing.
func (l *Lease) Release() {
	l.once.Do(func() {
		l.s.mu.Lock()
		l.released = true
		recount := l.recount
		l.s.mu.Unlock()
		l.cancel()
		l.s.unhold(l.ss, true, recount)
	})
}

// hold takes ss's lock: the common start of a run and of a file mutation.
func (s *Store) hold(ctx context.Context, owner, id string) (*sess, error) {
	s.mu.Lock()
	ss, err := s.lookupLocked(owner, id)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case ss.lock <- struct{}{}:
	case <-ss.gone:
		return nil, fmt.Errorf("%w: %q was deleted", ErrNotFound, id)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for session %q (another run or upload holds it): %w", id, context.Cause(ctx))
	}
	s.mu.Lock()
	if ss.deleted || s.closed {
		closed := s.closed
		s.mu.Unlock()
		<-ss.lock
		if closed {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("%w: %q was deleted", ErrNotFound, id)
	}
	ss.busy = true
	save := s.touchLocked(ss)
	s.mu.Unlock()
	if save {
		s.persist(ss)
	}
	return ss, nil
}

// unhold ends a hold. With recount the workspace is walked for its
// counts; file operations and ApplyChanges keep them themselves. After a
// run the metadata is saved.
func (s *Store) unhold(ss *sess, run, recount bool) {
	var (
		used    int64
		entries int
		err     error
	)
	if recount {
		// Holding the session, no upload of ours is in flight: any reserved
		// name in it was made by a run (to hide bytes from the quota, say)
		// or left by a crash, and goes.
		used, entries, err = s.usage(ss.id, true)
		if _, serr := s.snapDir.Lstat(ss.id); serr == nil {
			// Files the run replaced may now be its snapshots' alone.
			s.recountSnapBytes(ss)
		}
	}
	s.mu.Lock()
	save := false
	if !ss.deleted && !s.closed {
		if recount && err == nil {
			s.setUsedLocked(ss, used)
			ss.entries = entries
		} else if recount {
			s.opt.logger.Warn("session usage not recounted", "session_id", ss.id, "error", err)
		}
		// After a run (recount) the metadata is saved; after an upload only
		// on the touch throttle: Open recounts the bytes anyway, so an
		// upload costs no metadata fsync.
		save = s.touchLocked(ss) || run
	}
	s.mu.Unlock()
	if save {
		s.persist(ss)
	}
	s.mu.Lock()
	ss.busy = false
	s.mu.Unlock()
	<-ss.lock
}

// setUsedLocked sets a session's byte count, keeping the store's total.
func (s *Store) setUsedLocked(ss *sess, n int64) {
	if ss.deleted {
		return
	}
	s.total += n - ss.used
	ss.used = n
}

// roomLocked is what writes to ss may still add; credit is the size of
// what they replace.
func (s *Store) roomLocked(ss *sess, credit int64) int64 {
	room := min(s.lim.Quota-ss.used-ss.pending, s.lim.MaxTotalBytes-s.total) + credit
	return max(room, 0)
}
