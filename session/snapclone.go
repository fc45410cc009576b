package session

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// cloneTree copies the tree of src into dst (an empty folder) by hard
// links: folders are made (with their modes), regular files linked, links
// made again with their targets; anything else stays behind. Every step
// takes one element on directory handles, so nothing outside either folder
// is reached; the store's temporary names are left out. It costs a walk,
// not a copy: the two trees share their files' bytes, which is safe
// because no writer of a workspace changes a file in place (each writes a
// new file and renames it). It returns the bytes and entries of the tree.
func cloneTree(src, dst *os.Root) (int64, int, error) {
	names, err := fsroot.ReadDirNames(src)
	if err != nil {
		return 0, 0, err
	}
	var (
		bytes   int64
		entries int
	)
	for _, name := range names {
		if fsroot.IsTemp(name) {
			continue
		}
		fi, err := src.Lstat(name)
		if err != nil {
			return bytes, entries, err
		}
		entries++
		switch {
		case fi.IsDir():
			b, n, err := cloneDir(src, dst, name, fi)
			bytes, entries = bytes+b, entries+n
			if err != nil {
				return bytes, entries, fmt.Errorf("%s/%w", name, err)
			}
		case fi.Mode().IsRegular():
			err = fsroot.WithFd(src, func(sfd int) error {
				return fsroot.WithFd(dst, func(dfd int) error { return unix.Linkat(sfd, name, dfd, name, 0) })
			})
			bytes += fi.Size()
		case fi.Mode()&fs.ModeSymlink != 0:
			var target string
			if target, err = src.Readlink(name); err == nil {
				err = fsroot.WithFd(dst, func(dfd int) error { return unix.Symlinkat(target, dfd, name) })
			}
		default:
			entries-- // a fifo or socket a run left: not part of a workspace's files
		}
		if err != nil {
			return bytes, entries, fmt.Errorf("%s: %w", name, err)
		}
	}
	return bytes, entries, nil
}

func cloneDir(src, dst *os.Root, name string, fi fs.FileInfo) (int64, int, error) {
	if err := dst.Mkdir(name, fi.Mode().Perm()|0o700); err != nil {
		return 0, 0, err
	}
	if err := fsroot.ChmodNoFollow(dst, name, fi.Mode().Perm()|0o700|fs.ModeDir); err != nil {
		return 0, 0, err
	}
	from, err := fsroot.OpenSubdir(src, name, fi)
	if err != nil {
		return 0, 0, err
	}
	defer fsroot.CloseRoot(from)
	tfi, err := dst.Lstat(name)
	if err != nil {
		return 0, 0, err
	}
	to, err := fsroot.OpenSubdir(dst, name, tfi)
	if err != nil {
		return 0, 0, err
	}
	defer fsroot.CloseRoot(to)
	return cloneTree(from, to)
}

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
