package fsroot

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

// The helpers here are the only way the stores' file APIs touch a
// workspace. They work one path element at a time on directory handles
// (os.Root), so nothing outside the root is reachable, and they refuse every
// symlink instead of following it, so that a link a run left behind is
// shown by the API but never resolved by it.

// DirPerm and FilePerm are what a store creates: the sandbox user, a
// different uid, must be able to read them through the bind mount.
const (
	DirPerm  = 0o755
	FilePerm = 0o644
)

// WithFd runs fn with the file descriptor of r's directory.
func WithFd(r *os.Root, fn func(fd int) error) error {
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

// OpenNoFollow opens the single element name in r with O_NOFOLLOW, so that
// a file swapped for a link after it was checked fails with ELOOP instead
// of being followed. O_NONBLOCK keeps a FIFO planted in the workspace from
// blocking the open; callers check the type with Stat on the handle.
func OpenNoFollow(r *os.Root, name string, flag int, perm os.FileMode) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("internal: OpenNoFollow needs one element, got %q", name)
	}
	var f *os.File
	err := WithFd(r, func(dfd int) error {
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

// RenameAt moves one element between two directory handles without
// resolving anything but those two names (renameat never follows the last
// element of either path).
func RenameAt(from *os.Root, fromName string, to *os.Root, toName string) error {
	return WithFd(from, func(ffd int) error {
		return WithFd(to, func(tfd int) error {
			if err := unix.Renameat(ffd, fromName, tfd, toName); err != nil {
				return &os.LinkError{Op: "renameat", Old: fromName, New: toName, Err: err}
			}
			return nil
		})
	})
}

// Durability says whether writes are fsynced; only tests turn it off
// (SIGKILL keeps the page cache, and fuzzing needs speed).
type Durability struct{ NoSync bool }

// Dir makes a rename or create in r durable.
func (y Durability) Dir(r *os.Root) error {
	if y.NoSync {
		return nil
	}
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// File makes f's bytes durable.
func (y Durability) File(f *os.File) error {
	if y.NoSync {
		return nil
	}
	return f.Sync()
}

// OpenSubdir opens the real directory name in parent. fi is name's Lstat
// result; the handle opened must be that same directory, so a swap for a
// link between the Lstat and the open is refused rather than followed.
func OpenSubdir(parent *os.Root, name string, fi fs.FileInfo) (*os.Root, error) {
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	got, err := sub.Stat(".")
	if err != nil {
		CloseRoot(sub)
		return nil, err
	}
	if !os.SameFile(fi, got) {
		CloseRoot(sub)
		return nil, fmt.Errorf("%s changed while being opened (replaced by a link?): try again", name)
	}
	return sub, nil
}

// CloseRoot closes a directory handle: a failed close of one loses
// nothing, so there is nothing to report.
func CloseRoot(r *os.Root) { _ = r.Close() }

// LinkError describes a symlink met where the API needs a folder or file:
// it is shown, never followed.
func LinkError(r *os.Root, name, shown string, sentinel error) error {
	target, _ := r.Readlink(name)
	return fmt.Errorf("%w: %q is a symlink to %q; the file API never follows links: delete the link or use a path without it", sentinel, shown, target)
}

// Descend opens the folder dir (a clean slash path, "" for the workspace
// itself) under ws, one element at a time. Every element must be a real
// folder: a symlink or a file on the way is a *PathError. With create,
// missing folders are made (0755) and their paths returned (so a failed
// operation can remove them); without, a missing one is ErrFileNotFound.
func Descend(ws *os.Root, dir string, create bool) (*os.Root, []string, error) {
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
			if err = cur.Mkdir(name, DirPerm); err == nil {
				made = append(made, done)
				err = ChmodNoFollow(cur, name, DirPerm|fs.ModeDir)
			}
			if err == nil {
				fi, err = cur.Lstat(name)
			}
		}
		if err != nil {
			CloseRoot(cur)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, made, fmt.Errorf("%w: %q does not exist", ErrFileNotFound, done)
			}
			return nil, made, fmt.Errorf("opening %q: %w", done, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := cur.Readlink(name)
			CloseRoot(cur)
			return nil, made, BadPath(done, "it is a symlink to %q, and the file API never follows links: delete the link, or use the real folder's path", target)
		case !fi.IsDir():
			CloseRoot(cur)
			return nil, made, BadPath(done, "it is %s, not a folder: delete it first or choose another path", fsmode.Describe(fi.Mode()))
		}
		next, err := OpenSubdir(cur, name, fi)
		CloseRoot(cur)
		if err != nil {
			return nil, made, fmt.Errorf("opening %q: %w", done, err)
		}
		cur = next
	}
	return cur, made, nil
}

// ChmodNoFollow sets the mode of name through a no-follow handle (os.Root's
// Chmod may act on a link swapped in meanwhile).
func ChmodNoFollow(r *os.Root, name string, mode fs.FileMode) error {
	flag := unix.O_RDONLY
	if mode.IsDir() {
		flag |= unix.O_DIRECTORY
	}
	f, err := OpenNoFollow(r, name, flag, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(mode.Perm())
}

// IsELOOP reports the error OpenNoFollow gives for a link.
func IsELOOP(err error) bool { return errors.Is(err, syscall.ELOOP) }
