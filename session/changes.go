package session

import (
	"context"
	"fmt"
	"io"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The two owners of a workspace a run may write, and so the two
// sandbox.ChangeApplier: a session (through the Lease the run holds) and
// an operator's host folder (Folder). Both apply the layer with
// applyLayer; they differ in what bounds it.
var (
	_ sandbox.ChangeApplier = (*Lease)(nil)
	_ sandbox.ChangeApplier = (*Folder)(nil)
)

// ApplyChanges applies a run's change layer (see sandbox.ChangeApplier) to
// the leased session's workspace. It runs under the lease, so it takes
// turns with uploads and other runs like them; its bytes are counted
// against the session's quota and the store's total while they are read
// (a layer past them is a *LimitError and changes nothing). A malformed
// layer matches ErrBadLayer and changes nothing either. The session's
// bytes and entries move by exactly what the layer changed, so no walk of
// the workspace follows a run; only a layer that failed half-way has the
// workspace recounted when the lease is released.
func (l *Lease) ApplyChanges(ctx context.Context, layer io.Reader) ([]sandbox.FileChange, error) {
	s, ss := l.s, l.ss
	s.mu.Lock()
	gone := ss.deleted || s.closed || l.released
	s.mu.Unlock()
	if gone {
		return nil, fmt.Errorf("%w: %q was deleted, or the run's lease on it ended, before its changes came back", ErrNotFound, ss.id)
	}
	ws, err := s.wsDir.OpenRoot(ss.id)
	if err != nil {
		return nil, fmt.Errorf("opening session %q: %w", ss.id, err)
	}
	defer fsroot.CloseRoot(ws)
	c := s.newCharger(ss, 0)
	done, err := applyLayer(ctx, ws, layer, layerConfig{
		maxEntries: s.lim.MaxFiles, y: s.durable(), b: c,
	})
	c.settle(done.changes != nil, done.delta, done.entries)
	s.mu.Lock()
	if done.over.count > 0 {
		l.over = &done.over
	}
	// Past a failure the counts may be off by what the failed step did.
	l.recount = l.recount || err != nil && done.changes != nil
	s.mu.Unlock()
	if err == nil && len(done.changes) > 0 {
		if _, serr := s.snapDir.Lstat(ss.id); serr == nil {
			// Files the run replaced may now be its snapshots' alone.
			s.recountSnapBytes(ss)
		}
	}
	return done.changes, err
}

// NotKept is what a run's changes held past the session's room and were
// therefore not kept, or nil when everything was (ApplyChanges keeps what
// fits). Files names the first of them, in the layer's order; Count is
// how many there were; Limit is the limit they met (sessions.quota or
// sessions.max_total_bytes), with its hint.
type NotKept struct {
	Files []string
	Count int
	Limit *LimitError
}

// NotKept reports the files of the run's changes ApplyChanges left out
// for want of room; nil when it kept them all (or did not run).
func (l *Lease) NotKept() *NotKept {
	l.s.mu.Lock()
	o := l.over
	l.s.mu.Unlock()
	if o == nil {
		return nil
	}
	return &NotKept{Files: append([]string(nil), o.files...), Count: o.count, Limit: o.limit}
}

// folderMaxEntries bounds the entries of one run's change layer to a host
// folder: no quota applies there, but the layer is held in memory while
// it is staged.
const folderMaxEntries = 1 << 20

// ApplyChanges applies a run's change layer (see sandbox.ChangeApplier) to
// the folder, with the guards of a session (reserved temp names, no link
// followed, files replaced whole) but no quota: the run's write cap
// bounded what it wrote. A Folder opened
// read-only refuses it with ErrReadOnly.
func (f *Folder) ApplyChanges(ctx context.Context, layer io.Reader) ([]sandbox.FileChange, error) {
	if !f.writable {
		return nil, where.Errorf("%w: a run's changes were not applied to %s: the folder was opened read-only", ErrReadOnly, where.Path(f.dir))
	}
	done, err := applyLayer(ctx, f.root, layer, layerConfig{
		maxEntries: folderMaxEntries, b: unmetered{},
	})
	return done.changes, err
}

// replaces credits the bytes of a file a staged one replaces.
func (c *charger) replaces(n int64) { c.credit += n }

func (unmetered) replaces(int64) {}
func (unmetered) refund(int64)   {}
