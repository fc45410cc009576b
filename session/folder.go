package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/fsmode"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// ErrReadOnly is wrapped by the refusal of a write to a Folder opened
// read-only.
var ErrReadOnly = errors.New("read-only workspace folder")

// Folder is guarded file access to a host folder an operator chose (the
// project a local agent works on, given to `sandboxrun mcp --workspace`)
// rather than a session's workspace. Every operation goes through the same
// code as a session's: CheckPath on every caller path, each element opened
// without following a symlink (a link anywhere in the folder, to / or
// elsewhere, is shown by ListFiles and refused by the rest, never
// resolved), uploads written to a reserved temp name and renamed into
// place.
//
// What a session has and a Folder does not: an owner, a TTL, a lock that
// serializes uploads with runs, and a quota. Uploads are not bounded here
// (the caller bounds what it passes: the MCP server, its message size);
// listings are, by Limits.MaxFiles and Limits.MaxDepth, and so are paths,
// by Limits.MaxDepth. Because nothing bounds the size of the folder's
// files, neither OpenFile nor ListFiles hashes them (Entry.SHA256 is
// empty): that would read every byte of a large project. An upload
// interrupted by a crash can leave a temp file (fsroot.TempPrefix) at the top of
// the folder: it is never listed nor readable through a Folder, and it is
// not removed either, since the folder is the operator's.
//
// A Folder is safe for concurrent use.
type Folder struct {
	dir      string
	root     *os.Root
	lim      Limits
	writable bool
}

// OpenFolder opens dir (an existing folder, as policy.ResolveWorkspace
// returns it: absolute and resolved) for guarded access within lim (zero
// fields take their defaults). Only a writable Folder accepts PutFile; the
// caller decides, from the operator policy's workspace.write. The folder
// is held open until Close: a folder renamed or replaced meanwhile is not
// followed.
func OpenFolder(dir string, lim Limits, writable bool) (*Folder, error) {
	if dir == "" {
		return nil, errors.New("workspace folder: no folder given: pass an existing folder")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, where.Errorf("workspace folder %q: %w", where.Path(dir), err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, where.Errorf("workspace folder %q: %w: pass an existing folder", where.Path(dir), err)
	}
	if !fi.IsDir() {
		return nil, where.Errorf("workspace folder %q is %s, not a folder: pass a folder", where.Path(dir), fsmode.Describe(fi.Mode()))
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, where.Errorf("workspace folder %q: %w", where.Path(dir), err)
	}
	return &Folder{dir: abs, root: root, lim: lim.WithDefaults(), writable: writable}, nil
}

// Dir is the folder's absolute path.
func (f *Folder) Dir() string { return f.dir }

// Writable reports whether PutFile may write.
func (f *Folder) Writable() bool { return f.writable }

// Limits returns the effective limits (defaults filled in).
func (f *Folder) Limits() Limits { return f.lim }

// PutFile stores r at p as Store.PutFile does (temp name, fsync, rename;
// missing folders made; a link at p replaced, never followed; a link or a
// file among the parents refused), without a quota. A read-only Folder
// refuses it with ErrReadOnly and touches nothing.
func (f *Folder) PutFile(p string, r io.Reader) (FileInfo, error) {
	if !f.writable {
		return FileInfo{}, fmt.Errorf("%w: %q was not written: the workspace folder is read-only: the operator's policy file does not say workspace.write: declared "+
			"(the setting that lets the model write into it); write the file in a run's /tmp instead, or ask the operator", ErrReadOnly, p)
	}
	clean, err := fsroot.CheckPath(p, f.lim.MaxDepth)
	if err != nil {
		return FileInfo{}, err
	}
	return putFile(f.root, clean, r, fsroot.Durability{}, func(int, int64) (meter, error) { return unmetered{}, nil })
}

// OpenFile opens the regular file p for reading, as Store.OpenFile does,
// except that the Entry's SHA256 is empty (see Folder).
func (f *Folder) OpenFile(p string) (io.ReadCloser, Entry, error) {
	clean, err := fsroot.CheckPath(p, f.lim.MaxDepth)
	if err != nil {
		return nil, Entry{}, err
	}
	file, e, err := openFile(f.root, clean, false)
	if err != nil {
		return nil, Entry{}, err // a nil interface, not a nil *os.File in one
	}
	return file, e, nil
}

// ListFiles lists the folder (sub "") or its folder sub as Store.ListFiles
// does: sorted, links shown with their target and never followed, temp
// names hidden, more than MaxFiles entries a *LimitError, nothing deeper
// than MaxDepth. Files carry no SHA256 (see Folder).
func (f *Folder) ListFiles(sub string) ([]Entry, error) {
	clean, err := checkSub(sub, f.lim.MaxDepth)
	if err != nil {
		return nil, err
	}
	return listFiles(f.root, clean, f.lim, false)
}

// Close releases the folder; later calls fail.
func (f *Folder) Close() error { return f.root.Close() }

// unmetered is the meter of a Folder's uploads: nothing to charge.
type unmetered struct{}

func (unmetered) copy(w io.Writer, r io.Reader) (int64, error) {
	n, err := io.Copy(w, r)
	if err != nil {
		return n, fmt.Errorf("reading the upload: %w", err)
	}
	return n, nil
}

func (unmetered) done(bool, int64) {}
