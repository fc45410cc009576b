package session

import (
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// inode names a file across hard links.
type inode struct{ dev, ino uint64 }

// inodes walks r (no link followed) and returns its regular files' inodes
// with their sizes; with nested, files at r's top are left out (a
// snapshot folder's metadata).
func inodes(r *os.Root, nested bool) map[inode]int64 {
	out := map[inode]int64{}
	_ = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || nested && path.Dir(p) == "." {
			return nil //nolint:nilerr // what cannot be read is not counted
		}
		fi, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // gone meanwhile
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			out[inode{uint64(st.Dev), st.Ino}] = fi.Size() //nolint:unconvert // Dev's type differs by arch
		}
		return nil
	})
	return out
}

// snapBytesOf is what the snapshots of session id hold alone: the bytes of
// their files that the workspace no longer shares, each file counted once
// however many snapshots hold it.
func (s *Store) snapBytesOf(id string) int64 {
	snaps, err := s.snapDir.OpenRoot(id)
	if err != nil {
		return 0
	}
	defer fsroot.CloseRoot(snaps)
	ws, err := s.wsDir.OpenRoot(id)
	if err != nil {
		return 0
	}
	defer fsroot.CloseRoot(ws)
	live := inodes(ws, false)
	var total int64
	for ino, size := range inodes(snaps, true) {
		if _, shared := live[ino]; !shared {
			total += size
		}
	}
	return total
}

// recountSnapBytes refreshes what ss's snapshots alone hold, in the
// store's total.
func (s *Store) recountSnapBytes(ss *sess) {
	n := s.snapBytesOf(ss.id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ss.deleted {
		s.total += n - ss.snapBytes
		ss.snapBytes = n
	}
}
