package session

import (
	"context"
	"crypto/subtle"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// sess is one session in memory. id to ttl, the channels and ctx are set
// at creation; the fields from lastUsed on are guarded by Store.mu. ctx is
// kept (against the usual rule) because it is the session's lifetime: a
// cancellation scope every Lease.Ctx derives from.
type sess struct {
	id      string
	owner   string
	created time.Time
	ttl     time.Duration

	// lock serializes runs and file mutations: whoever has sent into it
	// holds the session.
	lock chan struct{}
	// gone is closed when the session is deleted, to wake Acquire waiters.
	gone   chan struct{}
	ctx    context.Context // parent of Lease.Ctx; cancelled on delete
	cancel context.CancelFunc

	lastUsed  time.Time
	savedUsed time.Time // lastUsed as last persisted
	used      int64     // bytes of regular files
	entries   int       // files, folders, links
	pending   int64     // bytes charged by writes in flight
	snapBytes int64     // bytes its snapshots alone hold (in the total, not the quota)
	busy      bool      // lock held (a lease or a file mutation)
	deleted   bool

	metaMu sync.Mutex // orders this session's metadata writes; not under mu
}

func (ss *sess) expiresAt() time.Time { return ss.lastUsed.Add(ss.ttl) }

// Info is what a caller sees of a session.
type Info struct {
	ID         string        `json:"id"`
	Owner      string        `json:"-"`
	CreatedAt  time.Time     `json:"created_at"`
	ExpiresAt  time.Time     `json:"expires_at"`
	TTL        time.Duration `json:"-"`
	BytesUsed  int64         `json:"bytes_used"`
	BytesLimit int64         `json:"bytes_limit"`
}

// Create makes a session for owner with the idle TTL ttl (0: Limits.TTL).
func (s *Store) Create(owner string, ttl time.Duration) (Info, error) {
	return s.create(owner, ttl, nil)
}

// create makes a session; fill, when set, puts its first files into its
// workspace before it exists for anyone, and returns their bytes and
// entries.
func (s *Store) create(owner string, ttl time.Duration, fill func(ws *os.Root) (int64, int, error)) (Info, error) {
	switch {
	case ttl < 0:
		return Info{}, fmt.Errorf("%w: %v is negative: give a positive duration such as 30m, or none for the default %v", ErrBadTTL, ttl, s.lim.TTL)
	case ttl == 0:
		ttl = s.lim.TTL
	case ttl > s.lim.MaxTTL:
		return Info{}, &LimitError{Limit: LimitMaxTTL, Value: int64(s.lim.MaxTTL),
			Hint: fmt.Sprintf("a session's ttl may be at most %v: ask for less, or raise sessions.max_ttl in the operator policy", s.lim.MaxTTL)}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Info{}, ErrClosed
	}
	n := s.creating[owner]
	for id, ss := range s.sessions {
		if _, err := s.lookupLocked(owner, id); err == nil && ss.owner == owner {
			n++ // expired ones awaiting the sweep do not count
		}
	}
	if n >= s.lim.MaxPerOwner {
		s.mu.Unlock()
		return Info{}, &LimitError{Limit: LimitPerOwner, Value: int64(s.lim.MaxPerOwner),
			Hint: "delete a session you no longer need, or raise sessions.max_per_token in the operator policy"}
	}
	// Counted as created while the folder and metadata are made outside the
	// mutex (an fsync must not stall every other session).
	s.creating[owner]++
	now := s.opt.now()
	s.mu.Unlock()

	ss := newSess(NewID(s.opt.replica), owner, now, now, ttl)
	ss.savedUsed = now
	err := s.makeSession(ss, fill)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.creating[owner]--; s.creating[owner] == 0 {
		delete(s.creating, owner)
	}
	if err == nil && s.total+ss.used > s.lim.MaxTotalBytes {
		err = totalError(s.lim.MaxTotalBytes)
	}
	if err != nil {
		if fill != nil {
			_ = s.removeFiles(ss.id)
		}
		return Info{}, err
	}
	s.total += ss.used
	s.sessions[ss.id] = ss
	return s.infoLocked(ss), nil
}

// makeSession writes a new session to disk: folder first, metadata second,
// so a crash in between leaves a folder without metadata, which Open
// removes.
func (s *Store) makeSession(ss *sess, fill func(ws *os.Root) (int64, int, error)) error {
	if err := s.wsDir.Mkdir(ss.id, fsroot.DirPerm); err != nil {
		return where.Errorf("creating session folder under %s: %w", where.Path(s.root), err)
	}
	err := fsroot.ChmodNoFollow(s.wsDir, ss.id, fsroot.DirPerm|os.ModeDir)
	if err == nil && fill != nil {
		var ws *os.Root
		if ws, err = s.wsDir.OpenRoot(ss.id); err == nil {
			ss.used, ss.entries, err = fill(ws)
			fsroot.CloseRoot(ws)
		}
	}
	if err != nil {
		err = where.Errorf("creating session folder under %s: %w", where.Path(s.root), err)
	} else {
		err = s.writeMeta(ss.meta())
	}
	if err != nil {
		_ = s.wsDir.RemoveAll(ss.id)
	}
	return err
}

func newSess(id, owner string, created, lastUsed time.Time, ttl time.Duration) *sess {
	ctx, cancel := context.WithCancel(context.Background())
	return &sess{id: id, owner: owner, created: created, ttl: ttl, lastUsed: lastUsed,
		lock: make(chan struct{}, 1), gone: make(chan struct{}), ctx: ctx, cancel: cancel}
}

func (ss *sess) meta() meta {
	return meta{Version: metaVersion, ID: ss.id, Owner: ss.owner, CreatedAt: ss.created,
		LastUsed: ss.lastUsed, TTL: ss.ttl, BytesUsed: ss.used}
}

func (s *Store) infoLocked(ss *sess) Info {
	return Info{ID: ss.id, Owner: ss.owner, CreatedAt: ss.created, ExpiresAt: ss.expiresAt(),
		TTL: ss.ttl, BytesUsed: ss.used, BytesLimit: s.lim.Quota}
}

// lookupLocked finds owner's live session id. Everything that is not
// (unknown, malformed, expired, deleted, another owner's) is ErrNotFound.
func (s *Store) lookupLocked(owner, id string) (*sess, error) {
	if s.closed {
		return nil, ErrClosed
	}
	ss, ok := s.sessions[id]
	if !ok || !s.ownsID(id) || ss.deleted ||
		subtle.ConstantTimeCompare([]byte(ss.owner), []byte(owner)) != 1 ||
		(!ss.busy && s.opt.now().After(ss.expiresAt())) {
		return nil, fmt.Errorf("%w: %q (it may have expired or been deleted; create a new one)", ErrNotFound, fsroot.Shorten(id))
	}
	return ss, nil
}

// touchLocked records a use and reports whether the metadata should be
// written (s.persist, after unlocking). That is at most every minute (or
// tenth of the TTL), so a burst of reads does not fsync each time; a crash
// may then shorten a session's life by that much, never lengthen it.
func (s *Store) touchLocked(ss *sess) bool {
	ss.lastUsed = s.opt.now()
	return ss.lastUsed.Sub(ss.savedUsed) >= min(time.Minute, ss.ttl/10)
}

// persist writes ss's metadata outside Store.mu, so an fsync never stalls
// other sessions; ss.metaMu keeps one session's writes in order. A failure
// is logged: the session still works and the next write retries.
func (s *Store) persist(ss *sess) {
	ss.metaMu.Lock()
	defer ss.metaMu.Unlock()
	s.mu.Lock()
	if ss.deleted || s.closed {
		s.mu.Unlock()
		return
	}
	m := ss.meta()
	s.mu.Unlock()
	if err := s.writeMeta(m); err != nil {
		s.opt.logger.Warn("session metadata not saved", "session_id", ss.id, "error", err)
		return
	}
	s.mu.Lock()
	if m.LastUsed.After(ss.savedUsed) {
		ss.savedUsed = m.LastUsed
	}
	s.mu.Unlock()
}

// persistLocked is persist for callers that hold Store.mu and have no
// concurrency to fear (Open, Close).
func (s *Store) persistLocked(ss *sess) {
	if err := s.writeMeta(ss.meta()); err != nil {
		s.opt.logger.Warn("session metadata not saved", "session_id", ss.id, "error", err)
		return
	}
	ss.savedUsed = ss.lastUsed
}

// Get returns owner's session id and touches its last use.
func (s *Store) Get(owner, id string) (Info, error) {
	s.mu.Lock()
	ss, err := s.lookupLocked(owner, id)
	if err != nil {
		s.mu.Unlock()
		return Info{}, err
	}
	save := s.touchLocked(ss)
	info := s.infoLocked(ss)
	s.mu.Unlock()
	if save {
		s.persist(ss)
	}
	return info, nil
}

// List returns owner's live sessions, oldest first.
func (s *Store) List(owner string) []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Info
	for id, ss := range s.sessions {
		if ss.owner == owner {
			if _, err := s.lookupLocked(owner, id); err == nil {
				out = append(out, s.infoLocked(ss))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
