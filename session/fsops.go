package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/fsmode"
)

// The helpers here are the only way the file API touches a workspace. They
// work one path element at a time on directory handles (os.Root), so
// nothing outside the session folder is reachable, and they refuse every
// symlink instead of following it, so that a link a run left behind is
// shown by the API but never resolved by it.

// dirPerm and filePerm are what the store creates: the sandbox user, a
// different uid, must be able to read them through the bind mount.
const (
	dirPerm  = 0o755
	filePerm = 0o644
)

// withFd runs fn with the file descriptor of r's directory.
func withFd(r *os.Root, fn func(fd int) error) error {
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// openNoFollow opens the single element name in r with O_NOFOLLOW, so that
// a file swapped for a link after it was checked fails with ELOOP instead
// of being followed. O_NONBLOCK keeps a FIFO planted in the workspace from
// blocking the open; callers check the type with Stat on the handle.
func openNoFollow(r *os.Root, name string, flag int, perm os.FileMode) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("internal: openNoFollow needs one element, got %q", name)
	}
	var f *os.File
	err := withFd(r, func(dfd int) error {
		for {
			fd, err := unix.Openat(dfd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return &os.PathError{Op: "openat", Path: name, Err: err}
			}
			f = os.NewFile(uintptr(fd), name)
			return nil
		}
	})
	return f, err
}

// renameAt moves one element between two directory handles without
// resolving anything but those two names (renameat never follows the last
// element of either path).
func renameAt(from *os.Root, fromName string, to *os.Root, toName string) error {
	return withFd(from, func(ffd int) error {
		return withFd(to, func(tfd int) error {
			if err := unix.Renameat(ffd, fromName, tfd, toName); err != nil {
				return &os.LinkError{Op: "renameat", Old: fromName, New: toName, Err: err}
			}
			return nil
		})
	})
}

// durability says whether writes are fsynced; only tests turn it off
// (SIGKILL keeps the page cache, and fuzzing needs speed).
type durability struct{ noSync bool }

// dir makes a rename or create in r durable.
func (y durability) dir(r *os.Root) error {
	if y.noSync {
		return nil
	}
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// file makes f's bytes durable.
func (y durability) file(f *os.File) error {
	if y.noSync {
		return nil
	}
	return f.Sync()
}

func (s *Store) durable() durability { return durability{noSync: s.opt.noSync} }

// syncDir makes a rename or create in r durable.
func (s *Store) syncDir(r *os.Root) error { return s.durable().dir(r) }

// syncFile makes f's bytes durable.
func (s *Store) syncFile(f *os.File) error { return s.durable().file(f) }

// openSubdir opens the real directory name in parent. fi is name's Lstat
// result; the handle opened must be that same directory, so a swap for a
// link between the Lstat and the open is refused rather than followed.
func openSubdir(parent *os.Root, name string, fi fs.FileInfo) (*os.Root, error) {
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	got, err := sub.Stat(".")
	if err != nil {
		closeRoot(sub)
		return nil, err
	}
	if !os.SameFile(fi, got) {
		closeRoot(sub)
		return nil, fmt.Errorf("%s changed while being opened (replaced by a link?): try again", name)
	}
	return sub, nil
}

// closeRoot closes a directory handle: a failed close of one loses
// nothing, so there is nothing to report.
func closeRoot(r *os.Root) { _ = r.Close() }

// linkError describes a symlink met where the API needs a folder or file:
// it is shown, never followed.
func linkError(r *os.Root, name, shown string, sentinel error) error {
	target, _ := r.Readlink(name)
	return fmt.Errorf("%w: %q is a symlink to %q; the file API never follows links: delete the link or use a path without it", sentinel, shown, target)
}

// descend opens the folder dir (a clean slash path, "" for the workspace
// itself) under ws, one element at a time. Every element must be a real
// folder: a symlink or a file on the way is a *PathError. With create,
// missing folders are made (0755) and their paths returned (so a failed
// operation can remove them); without, a missing one is ErrFileNotFound.
func descend(ws *os.Root, dir string, create bool) (*os.Root, []string, error) {
	dir = strings.Trim(dir, "/")
	cur, err := ws.OpenRoot(".")
	if err != nil {
		return nil, nil, err
	}
	if dir == "" {
		return cur, nil, nil
	}
	var made []string
	done := ""
	for _, name := range strings.Split(dir, "/") {
		done = path.Join(done, name)
		fi, err := cur.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err = cur.Mkdir(name, dirPerm); err == nil {
				made = append(made, done)
				err = chmodNoFollow(cur, name, dirPerm|fs.ModeDir)
			}
			if err == nil {
				fi, err = cur.Lstat(name)
			}
		}
		if err != nil {
			closeRoot(cur)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, made, fmt.Errorf("%w: %q does not exist", ErrFileNotFound, done)
			}
			return nil, made, fmt.Errorf("opening %q: %w", done, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := cur.Readlink(name)
			closeRoot(cur)
			return nil, made, badPath(done, "it is a symlink to %q, and the file API never follows links: delete the link, or use the real folder's path", target)
		case !fi.IsDir():
			closeRoot(cur)
			return nil, made, badPath(done, "it is %s, not a folder: delete it first or choose another path", fsmode.Describe(fi.Mode()))
		}
		next, err := openSubdir(cur, name, fi)
		closeRoot(cur)
		if err != nil {
			return nil, made, fmt.Errorf("opening %q: %w", done, err)
		}
		cur = next
	}
	return cur, made, nil
}

// chmodNoFollow sets the mode of name through a no-follow handle (os.Root's
// Chmod may act on a link swapped in meanwhile).
func chmodNoFollow(r *os.Root, name string, mode fs.FileMode) error {
	flag := unix.O_RDONLY
	if mode.IsDir() {
		flag |= unix.O_DIRECTORY
	}
	f, err := openNoFollow(r, name, flag, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(mode.Perm())
}

// isELOOP reports the error openNoFollow gives for a link.
func isELOOP(err error) bool { return errors.Is(err, syscall.ELOOP) }
