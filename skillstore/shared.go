package skillstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Several processes (the replicas of a server) may share one store folder,
// on a volume every one of them mounts (NFSv4, CephFS, EFS…): nothing
// about the store is kept in memory between calls, every read goes to the
// folder, and the few steps that must not interleave take a lock on a
// file. The folder's file system must give flock(2) locks that hold
// between hosts: NFSv4 and NFSv3 with NLM (not mounted nolock or
// local_lock=flock), CephFS, a local disk.
//
//   - ROOT/.locks/OWNER is locked while a version of OWNER's is committed
//     or removed: the limits on skills and versions are counted, and a
//     version named, under it, whichever process does it.
//   - ROOT/.staging/p-RANDOM is one process's staging folder (uploads being
//     written, what is being deleted), and its file "lock" is locked for
//     as long as the process keeps the store open (the folder is made as
//     n-RANDOM, locked, and renamed). A p- folder whose lock nobody holds
//     is a crashed process's: any process removes it at once.

const (
	locksDir = ".locks"
	// procPrefix starts the name of a process's staging folder, newPrefix
	// the name it has until its lock is taken.
	procPrefix = "p-"
	newPrefix  = "n-"
	procLock   = "lock"
	// claimGrace is how old a staging folder not yet locked must be before
	// another process removes it: its process died before it could lock.
	claimGrace = time.Minute
	// legacyGrace is how old an entry of the staging folder written by a
	// version that kept one staging folder per store must be before it is
	// removed: such a server may still be running during an upgrade.
	legacyGrace = time.Hour
)

// openStaging makes this process's staging folder and locks it, then
// removes what crashed processes left.
func (s *Store) openStaging() error {
	staging := filepath.Join(s.root, stagingDir)
	for _, d := range []string{staging, filepath.Join(s.root, locksDir)} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("skill store: %w", err)
		}
	}
	// Made under another prefix, locked, then renamed: a folder named
	// procPrefix is locked from its first moment for as long as its
	// process lives.
	tmp, err := os.MkdirTemp(staging, newPrefix)
	if err != nil {
		return fmt.Errorf("skill store: %w", err)
	}
	dir := filepath.Join(staging, procPrefix+strings.TrimPrefix(filepath.Base(tmp), newPrefix))
	f, err := os.OpenFile(filepath.Join(tmp, procLock), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil {
			err = where.Errorf("skill store %s: locking its staging folder (%w): the store's file system must support flock, as NFSv4 and CephFS do", where.Path(s.root), err)
		}
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("skill store: %w", err)
	}
	s.stageMu.Lock()
	old := s.stageLock
	s.stage, s.stageLock = dir, f
	s.stageMu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	s.sweep()
	return nil
}

// stagingFolder is this process's staging folder, made again when it is
// gone: a server of a version before this layout removes the whole
// .staging folder when it starts, as it may during a rolling upgrade.
func (s *Store) stagingFolder() (string, error) {
	s.stageMu.Lock()
	dir := s.stage
	s.stageMu.Unlock()
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return dir, nil
	}
	s.restageMu.Lock()
	defer s.restageMu.Unlock()
	s.stageMu.Lock()
	again := s.stage != dir
	dir = s.stage
	s.stageMu.Unlock()
	if again {
		return dir, nil // another goroutine made it anew
	}
	if err := s.openStaging(); err != nil {
		return "", err
	}
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	return s.stage, nil
}

// Close releases this process's staging folder. The store is not used
// after.
func (s *Store) Close() error {
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	if s.stageLock == nil {
		return nil
	}
	err := os.RemoveAll(s.stage)
	err = errors.Join(err, s.stageLock.Close())
	s.stageLock = nil
	return err
}

// sweep removes the staging folders of processes that are gone: their
// lock is free (a crashed process's locks are released by the kernel, or
// by the file server when the client's lease runs out). A folder whose
// lock is held is another process's work in flight and is left alone.
// Errors are ignored: the next sweep tries again.
func (s *Store) sweep() {
	staging := filepath.Join(s.root, stagingDir)
	ents, err := os.ReadDir(staging)
	if err != nil {
		return
	}
	now := time.Now() // not s.now: the file times are the real clock's
	s.stageMu.Lock()
	own := s.stage
	s.stageMu.Unlock()
	for _, e := range ents {
		p := filepath.Join(staging, e.Name())
		if p == own {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		age := now.Sub(fi.ModTime())
		switch {
		case strings.HasPrefix(e.Name(), procPrefix):
			s.reclaim(p)
		case strings.HasPrefix(e.Name(), newPrefix) && age > claimGrace, age > legacyGrace:
			_ = os.RemoveAll(p)
		}
	}
}

// reclaim removes the staging folder dir when no process holds its lock.
func (s *Store) reclaim(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, procLock), os.O_RDWR, 0)
	if err != nil {
		return // no lock file: another process is removing the folder
	}
	defer func() { _ = f.Close() }()
	if flock(f, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // held: a live process's
	}
	_ = os.RemoveAll(dir)
}

// lockOwner takes the lock of owner's folder od, blocking until no other
// process or goroutine holds it; the function returned releases it.
func (s *Store) lockOwner(od string) (func(), error) {
	p := filepath.Join(s.root, locksDir, od)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // the locks folder removed by hand: made again
		if err = os.Mkdir(filepath.Dir(p), 0o700); err == nil || errors.Is(err, fs.ErrExist) {
			f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("skill store: locking the token's skills: %w", err)
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, where.Errorf("skill store: locking %s: %w", where.Path(f.Name()), err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}

// flock is flock(2) on f, repeated when a signal interrupts it.
func flock(f *os.File, how int) error {
	fd := int(f.Fd()) //nolint:gosec // a file descriptor fits in an int
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// lock orders the commits and removals of owner folder od: this
// process's goroutines by s.mu, processes by the owner's file lock.
func (s *Store) lock(od string) (func(), error) {
	s.mu.Lock()
	release, err := s.lockOwner(od)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// What was committed or removed under the lock changes the owner's
	// bytes: counted again at the next ask.
	return func() { s.counted.Forget(od); release(); s.mu.Unlock() }, nil
}
