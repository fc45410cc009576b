package sandbox

import (
	"archive/tar"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// A writable workspace reaches a sandbox as a copy the backend sends in: a
// tar stream of the caller's folder (sandbox/docker copies it into a tmpfs
// volume, sandbox/kube sends it over the run's side channel). What comes
// back goes through the Spec's ChangeApplier.

// PageSize is what tmpfs charges a file at least.
const PageSize = 4096

// TreeSize is what root's files take in a tmpfs: every regular file rounded
// up to whole pages. Symlinks are not followed. It stops counting once the
// total reaches limit.
func TreeSize(root string, limit int64) (int64, error) {
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrPermission) && p != root:
			return skipUnreadable(d) // not Copied either (WriteTree)
		case err != nil:
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total += (fi.Size() + PageSize - 1) / PageSize * PageSize
			if total >= limit {
				return filepath.SkipAll
			}
		}
		return nil
	})
	if err != nil {
		return 0, where.Errorf("%w: measure %s: %w", ErrWorkspace, where.Path(root), err)
	}
	return total, nil
}

// skipUnreadable passes over an entry the caller may not read.
func skipUnreadable(d fs.DirEntry) error {
	if d != nil && d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

// Copied is what the copy into the sandbox held at a path, to tell what
// the script changed.
type Copied struct {
	Typ    byte // tar.TypeDir, TypeReg or TypeSymlink
	Size   int64
	Perm   int64
	MTime  time.Time
	Target string
	// RootOwned: a set-id file of the caller's, shared read-only and
	// owned by root, so the script could replace it but not change it.
	RootOwned bool
}

// WriteTree writes root's folders, regular files and symlinks (never
// followed) as a tar stream with paths relative to root, owned by uid:gid
// (the sandbox user), set-id bits dropped, and returns what it wrote, by
// relative path.
func WriteTree(w io.Writer, root string, uid, gid int) (map[string]Copied, error) {
	tw := tar.NewWriter(w)
	seen := map[string]Copied{}
	// Files are opened through the root, so a symlink swapped in during
	// the walk cannot lead outside it.
	dir, err := os.OpenRoot(root)
	if err != nil {
		return seen, err
	}
	defer func() { _ = dir.Close() }() // read-only
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrPermission) && p != root:
			// The caller cannot read it, so neither may the sandbox; it
			// stays out of the copy (and out of the hand-back's deletions).
			return skipUnreadable(d)
		case err != nil:
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		h := &tar.Header{Name: rel, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Uid: uid, Gid: gid}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, rel+"/"
			seen[rel] = Copied{Typ: tar.TypeDir, Perm: h.Mode}
			return tw.WriteHeader(h)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := dir.Readlink(rel)
			if err != nil {
				return err
			}
			if ClimbsOut(rel, target) {
				// The engine refuses the whole copy for such a link
				// ("invalid symlink"), so one a run left would fail every
				// later run; it stays on the host, out of the sandbox and
				// out of the hand-back's deletions, like an unreadable file.
				return nil
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
			seen[rel] = Copied{Typ: tar.TypeSymlink, Target: target}
			return tw.WriteHeader(h)
		case d.Type().IsRegular():
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				// The caller's set-id files are shared read-only and
				// owned by root.
				h.Uid, h.Gid, h.Mode = 0, 0, int64(fi.Mode().Perm()&0o555)
			}
			f, err := dir.Open(rel)
			if errors.Is(err, fs.ErrPermission) {
				return nil
			}
			if err != nil {
				return err
			}
			defer f.Close()
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
				return where.Errorf("read %s: %w", where.Path(p), err)
			}
			seen[rel] = Copied{Typ: tar.TypeReg, Size: fi.Size(), Perm: h.Mode, MTime: fi.ModTime(), RootOwned: h.Uid == 0}
		}
		return nil // sockets, devices, fifos stay behind
	})
	if err != nil {
		return seen, err
	}
	return seen, tw.Close()
}

// ClimbsOut reports whether the relative symlink target, resolved from the
// folder of the link at rel (a path relative to the workspace), leaves the
// workspace.
func ClimbsOut(rel, target string) bool {
	if path.IsAbs(target) {
		return false
	}
	j := path.Join("/w", path.Dir(rel), target)
	return j != "/w" && !strings.HasPrefix(j, "/w/")
}

// MinFree is the room a volume keeps past a workspace's files when these
// fill the write cap: enough for the script's reads to work (tmpfs
// charges whole pages), too little to matter to a quota.
const MinFree = 4 * PageSize

// WorkspaceSize is the size of a writable workspace's file system (a
// tmpfs on every backend): the write cap,
// or, when the workspace's files alone (in whole pages) leave less than
// MinFree of it, their size and MinFree.
func WorkspaceSize(spec *Spec) (int64, error) {
	limit := spec.Limits.WorkspaceWriteBytes
	size, err := TreeSize(spec.Workspace, limit-MinFree)
	if err != nil {
		return 0, err
	}
	if size < limit-MinFree {
		return limit, nil
	}
	if size, err = TreeSize(spec.Workspace, math.MaxInt64); err != nil {
		return 0, err
	}
	return size + MinFree, nil
}

// WorkspaceFacts are what a copy-on-write view of a workspace needs to
// know of its files.
type WorkspaceFacts struct {
	// Bytes is what the files take: in a tmpfs (TreeSize) when measured,
	// or, vouched for by their owner (Spec.WorkspaceFacts), the owner's
	// exact count, so that a view's room is what its quota has left.
	Bytes int64
	// UID and GID own the workspace's root folder; Uniform says they own
	// every entry in it too and no file has a set-id bit. Only then is a
	// view the same as a copy: the view shows that owner as the sandbox
	// user, where an entry of another owner would keep the permissions it
	// has on the host, and a copy shares set-id files read-only (WriteTree).
	UID, GID int
	Uniform  bool
}

// MeasureWorkspace walks the workspace dir once for its WorkspaceFacts.
func MeasureWorkspace(dir string) (WorkspaceFacts, error) {
	var f WorkspaceFacts
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return f, where.Errorf("%w: measure %s: %w", ErrWorkspace, where.Path(dir), err)
	}
	f.UID, f.GID, f.Uniform = int(st.Uid), int(st.Gid), true
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if s, ok := fi.Sys().(*syscall.Stat_t); !ok || int(s.Uid) != f.UID || int(s.Gid) != f.GID ||
			fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			f.Uniform = false
		}
		if d.Type().IsRegular() {
			f.Bytes += (fi.Size() + PageSize - 1) / PageSize * PageSize
		}
		return nil
	})
	if err != nil {
		return f, where.Errorf("%w: measure %s: %w", ErrWorkspace, where.Path(dir), err)
	}
	return f, nil
}

// FactsOf are the facts of spec's workspace: its owner's
// (Spec.WorkspaceFacts) when it vouched for them, else measured.
func FactsOf(spec *Spec) (WorkspaceFacts, error) {
	if spec.WorkspaceFacts != nil {
		return *spec.WorkspaceFacts, nil
	}
	return MeasureWorkspace(spec.Workspace)
}

// Room is what a copy-on-write view's upper layer may hold under the write
// cap limit: the cap less the files, and never less than MinFree, so a
// workspace at its cap still runs (reads work, writes fail with ENOSPC).
// Copies of the files a run updates count against it until the run's
// changes are applied.
func (f WorkspaceFacts) Room(limit int64) int64 { return max(limit-f.Bytes, MinFree) }
