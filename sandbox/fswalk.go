package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Bounds of a workspace walk: sharing a huge tree (a home directory, a
// monorepo with node_modules) with the sandbox user is refused rather than
// left to run for minutes.
const (
	maxWalkEntries = 200_000
	maxWalkDepth   = 256
)

// errWalkLimit: the tree is larger than a walk is allowed to visit.
var errWalkLimit = errors.New("too many entries")

// node is one file system object met by walkTree, held by an O_PATH file
// descriptor so that every operation applies to that very inode even if a
// path component is swapped for a symbolic link meanwhile.
type node struct {
	fd   int
	path string // for messages only
	st   unix.Stat_t
}

// procPath names the node for calls that take a path (xattrs, chmod): the
// /proc/self/fd link resolves to the inode the descriptor holds.
func (n *node) procPath() string { return "/proc/self/fd/" + strconv.Itoa(n.fd) }

func (n *node) isDir() bool { return n.st.Mode&unix.S_IFMT == unix.S_IFDIR }

// walkTree calls visit for root and everything below it on the same file
// system, parents before children, never following symbolic links. It
// stops at the first error.
func walkTree(root string, visit func(*node) error) error {
	return (&walker{visit: visit}).run(root)
}

// maxWalkErrors bounds the errors a walkTreeAll keeps; the rest are counted.
const maxWalkErrors = 10

type walker struct {
	dev       uint64
	count     int
	visit     func(*node) error
	keepGoing bool
	errs      []error
	more      int // errors past maxWalkErrors
}

func (w *walker) run(root string) error {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	n := &node{fd: fd, path: root}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &n.st); err != nil {
		return &os.PathError{Op: "stat", Path: root, Err: err}
	}
	w.dev = n.st.Dev
	errs := append([]error{w.walk(n, 0)}, w.errs...)
	if w.more > 0 {
		errs = append(errs, fmt.Errorf("and %d more errors", w.more))
	}
	return errors.Join(errs...)
}

// fail records err and returns nil when the walk goes on past errors, else
// returns err to stop it.
func (w *walker) fail(err error) error {
	if !w.keepGoing {
		return err
	}
	if len(w.errs) < maxWalkErrors {
		w.errs = append(w.errs, err)
	} else {
		w.more++
	}
	return nil
}

func (w *walker) walk(n *node, depth int) error {
	w.count++
	if w.count > maxWalkEntries {
		return fmt.Errorf("%w: more than %d below the top", errWalkLimit, maxWalkEntries)
	}
	if err := w.visit(n); err != nil {
		if err := w.fail(err); err != nil {
			return err
		}
	}
	if !n.isDir() {
		return nil
	}
	if depth >= maxWalkDepth {
		return w.fail(where.Errorf("%w: %s is nested more than %d levels deep", errWalkLimit, where.Path(n.path), maxWalkDepth))
	}
	dfd, err := unix.Openat(n.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return w.fail(&os.PathError{Op: "open", Path: n.path, Err: err})
	}
	dir := os.NewFile(uintptr(dfd), n.path)
	defer dir.Close()
	for {
		names, err := dir.Readdirnames(1024)
		for _, name := range names {
			if err := w.child(n, name, depth); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return w.fail(where.Errorf("read directory %s: %w", where.Path(n.path), err))
		}
	}
}

func (w *walker) child(parent *node, name string, depth int) error {
	p := filepath.Join(parent.path, name)
	fd, err := unix.Openat(parent.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed meanwhile
	}
	if err != nil {
		return w.fail(&os.PathError{Op: "open", Path: p, Err: err})
	}
	defer unix.Close(fd)
	c := &node{fd: fd, path: p}
	if err := unix.Fstat(fd, &c.st); err != nil {
		return w.fail(&os.PathError{Op: "stat", Path: p, Err: err})
	}
	// Mounts below the workspace are not bound into the sandbox (the bind
	// is not recursive), so they are neither shared nor handed back.
	if c.st.Dev != w.dev {
		return nil
	}
	return w.walk(c, depth+1)
}
