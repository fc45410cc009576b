package fsroot

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// CloneTree copies the tree of src into dst (an empty folder) by hard
// links: folders are made (with their modes), regular files linked, links
// made again with their targets; anything else stays behind. Every step
// takes one element on directory handles, so nothing outside either folder
// is reached; temporary names (IsTemp) are left out. It costs a walk,
// not a copy: the two trees share their files' bytes, which is safe only
// while no writer of either tree changes a file in place (the session
// store's writers each write a new file and rename it). It returns the
// bytes and entries of the tree.
func CloneTree(src, dst *os.Root) (int64, int, error) {
	names, err := ReadDirNames(src)
	if err != nil {
		return 0, 0, err
	}
	var (
		bytes   int64
		entries int
	)
	for _, name := range names {
		if IsTemp(name) {
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
			err = WithFd(src, func(sfd int) error {
				return WithFd(dst, func(dfd int) error { return unix.Linkat(sfd, name, dfd, name, 0) })
			})
			bytes += fi.Size()
		case fi.Mode()&fs.ModeSymlink != 0:
			var target string
			if target, err = src.Readlink(name); err == nil {
				err = WithFd(dst, func(dfd int) error { return unix.Symlinkat(target, dfd, name) })
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
	if err := ChmodNoFollow(dst, name, fi.Mode().Perm()|0o700|fs.ModeDir); err != nil {
		return 0, 0, err
	}
	from, err := OpenSubdir(src, name, fi)
	if err != nil {
		return 0, 0, err
	}
	defer CloseRoot(from)
	tfi, err := dst.Lstat(name)
	if err != nil {
		return 0, 0, err
	}
	to, err := OpenSubdir(dst, name, tfi)
	if err != nil {
		return 0, 0, err
	}
	defer CloseRoot(to)
	return CloneTree(from, to)
}
