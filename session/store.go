package session

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Store is the set of sessions under one root. Layout:
//
//	<root>/meta/          0700: <id>.json per session, and the lock file
//	<root>/ws/            0711: not listable, so ids cannot be read off it
//	<root>/ws/<id>/       0755: the session's workspace (its /workspace)
//	<root>/snaps/         0700: <id>/<snap>/ a snapshot's files (hard links
//	                      to the workspace's while neither changed), and
//	                      <id>/<snap>.json its metadata
//
// All methods are safe for concurrent use. One process at a time may open
// a root (an flock on meta/lock).
type Store struct {
	root string
	lim  Limits
	opt  options

	metaDir *os.Root
	wsDir   *os.Root
	snapDir *os.Root
	lock    *os.File

	mu       sync.Mutex
	sessions map[string]*sess
	creating map[string]int // per owner: Creates in progress
	total    int64          // bytes of all sessions, in-flight writes included
	closed   bool
	// foreign: Open found an entry the store did not make as it makes
	// them (owners.go); it then vouches for no workspace's files.
	foreign bool
}

// Open opens the store at root, creating it if needed, and recovers from
// whatever a crash left: temp files of interrupted writes are removed, so
// are expired sessions and workspace folders without valid metadata (each
// logged); the rest are loaded with their bytes recounted.
func Open(root string, lim Limits, opts ...Option) (*Store, error) {
	o := defaultOptions()
	for _, fn := range opts {
		fn(&o)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, where.Errorf("sessions root %q: %w", where.Path(root), err)
	}
	s := &Store{root: abs, lim: lim.WithDefaults(), opt: o, sessions: map[string]*sess{}, creating: map[string]int{}}
	if err := s.openDirs(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := s.checkReplica(); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// openDirs makes the layout (fixing the metadata area's mode) and takes the
// root's lock.
func (s *Store) openDirs() error {
	fix := fmt.Sprintf("create it, or make it writable by this user (uid %d), or choose another sessions root", os.Getuid())
	if err := os.MkdirAll(s.root, 0o755); err != nil { //nolint:gosec // the session folders under it are mounted for the sandbox user
		return where.Errorf("sessions root %q: %w: %s", where.Path(s.root), err, fix)
	}
	for _, d := range []struct {
		name string
		perm os.FileMode
	}{{"meta", 0o700}, {"ws", 0o711}, {"snaps", 0o700}} {
		p := filepath.Join(s.root, d.name)
		if err := os.Mkdir(p, d.perm); err != nil && !os.IsExist(err) {
			return where.Errorf("sessions root %q: %w: %s", where.Path(s.root), err, fix)
		}
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return where.Errorf("sessions root %q: %s is not a folder: remove it or choose another root", where.Path(s.root), where.Path(p))
		}
		if err := os.Chmod(p, d.perm); err != nil {
			return where.Errorf("sessions root %q: %w: %s", where.Path(s.root), err, fix)
		}
	}
	var err error
	if s.metaDir, err = os.OpenRoot(filepath.Join(s.root, "meta")); err != nil {
		return where.Errorf("sessions root %q: %w", where.Path(s.root), err)
	}
	if s.wsDir, err = os.OpenRoot(filepath.Join(s.root, "ws")); err != nil {
		return where.Errorf("sessions root %q: %w", where.Path(s.root), err)
	}
	if s.snapDir, err = os.OpenRoot(filepath.Join(s.root, "snaps")); err != nil {
		return where.Errorf("sessions root %q: %w", where.Path(s.root), err)
	}
	if s.lock, err = s.metaDir.OpenFile("lock", os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return where.Errorf("sessions root %q: %w", where.Path(s.root), err)
	}
	if err := unix.Flock(int(s.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return where.Errorf("sessions root %q is in use by another sandboxrun process (%w): stop it, or give each server its own sessions root", where.Path(s.root), err)
	}
	return nil
}

func (s *Store) closeFiles() {
	if s.lock != nil {
		_ = s.lock.Close() // releases the flock
	}
	if s.wsDir != nil {
		_ = s.wsDir.Close()
	}
	if s.snapDir != nil {
		_ = s.snapDir.Close()
	}
	if s.metaDir != nil {
		_ = s.metaDir.Close()
	}
}

// Root returns the absolute sessions root.
func (s *Store) Root() string { return s.root }

// Limits returns the effective limits (defaults filled in).
func (s *Store) Limits() Limits { return s.lim }

// Close persists every session's last use and releases the root. Leases
// still held stay valid until released; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	for _, ss := range s.sessions {
		if !ss.deleted {
			s.persistLocked(ss)
		}
	}
	s.closed = true
	s.mu.Unlock()
	s.closeFiles()
	return nil
}

// durable says whether the store fsyncs its writes (tests turn it off).
func (s *Store) durable() fsroot.Durability { return fsroot.Durability{NoSync: s.opt.noSync} }

// syncDir makes a rename or create in r durable.
func (s *Store) syncDir(r *os.Root) error { return s.durable().Dir(r) }

// syncFile makes f's bytes durable.
func (s *Store) syncFile(f *os.File) error { return s.durable().File(f) }
