package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// A writable workspace that travels over the channel (frame.Workspace):
// init fetches the files into the job's folder before the child starts,
// notes what each entry was, and after the Result frame sends back what
// the child changed, as a layer in the OCI form (sandbox.ChangeApplier).
// The folder's file system (a size-limited tmpfs) is the write cap.

// workspaceTree is a fetched workspace and what it held once fetched.
type workspaceTree struct {
	dir    string
	before map[string]entryState
}

// entryState is what tells a changed entry from an untouched one: any
// write, chmod, rename or replacement changes the inode's change time or
// the inode itself, and no process can set a change time.
type entryState struct {
	ino   uint64
	mode  uint32
	size  int64
	mtime syscall.Timespec
	ctime syscall.Timespec
}

func stateOf(fi fs.FileInfo) entryState {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return entryState{mode: uint32(fi.Mode()), size: fi.Size()}
	}
	return entryState{ino: st.Ino, mode: st.Mode, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

func (e entryState) isDir() bool { return e.mode&syscall.S_IFMT == syscall.S_IFDIR }

// fetchWorkspace asks the host for the workspace's files and writes them
// into w.Dir.
func fetchWorkspace(ch *channel, w *frame.Workspace) (*workspaceTree, error) {
	if ch == nil {
		return nil, fmt.Errorf("%w: workspace: %w", errBadJob, errNoChannel)
	}
	if !filepath.IsAbs(w.Dir) {
		return nil, fmt.Errorf("%w: workspace dir %q is not absolute", errBadJob, w.Dir)
	}
	s, err := ch.open(frame.StreamWorkspaceIn)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	if err := extract(s, w.Dir); err != nil {
		return nil, fmt.Errorf("fetch the workspace: %w", err)
	}
	before, err := snapshotTree(w.Dir)
	if err != nil {
		return nil, err
	}
	return &workspaceTree{dir: w.Dir, before: before}, nil
}

// extract writes the folders, regular files and symlinks of a tar stream
// into dir, through an os.Root so that no name leaves it. Folders get
// their modes and times last, once nothing more is written into them.
func extract(r io.Reader, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	type dirMeta struct {
		name  string
		perm  fs.FileMode
		mtime time.Time
	}
	var dirs []dirMeta
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name, ok := relName(h.Name)
		if !ok {
			return fmt.Errorf("unsafe name %q in the workspace's files", h.Name)
		}
		perm := fs.FileMode(h.Mode & 0o777) //nolint:gosec // masked to the permission bits
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMeta{name, perm, h.ModTime})
		case tar.TypeReg:
			if err := extractFile(root, name, tr, perm, h.ModTime); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		}
	}
	for _, d := range slices.Backward(dirs) {
		if err := root.Chmod(d.name, d.perm); err != nil {
			return err
		}
		if err := root.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return err
		}
	}
	return nil
}

func extractFile(root *os.Root, name string, r io.Reader, perm fs.FileMode, mtime time.Time) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := root.Chmod(name, perm); err != nil {
		return err
	}
	return root.Chtimes(name, mtime, mtime)
}

// relName cleans a tar name to a path relative to the folder; false when
// it is empty, absolute or climbs out.
func relName(name string) (string, bool) {
	c := path.Clean(strings.TrimSuffix(name, "/"))
	if c == "." || c == "" || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// snapshotTree notes every entry under dir, by slash-separated relative
// path. Symlinks are not followed.
func snapshotTree(dir string) (map[string]entryState, error) {
	out := map[string]entryState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = stateOf(fi)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("note the workspace's files: %w", err)
	}
	return out, nil
}
