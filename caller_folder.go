package sandboxrun

import (
	"io"

	"github.com/sandboxrun/sandboxrun/session"
)

// Folder is a host folder a caller's file calls and runs work in instead
// of a session (sandboxrun mcp --workspace): the sessions' own guards (no
// path out of it, no symlink followed, the policy's sessions.max_files and
// max_depth), every error told as the door's caller is told errors, the
// folder itself as /workspace.
type Folder struct {
	d *Door
	f *session.Folder
}

// OpenFolder opens dir (absolute and resolved, as policy.ResolveWorkspace
// returns it) for the caller; writable lets PutFile in. Close it when done.
func (d *Door) OpenFolder(dir string, writable bool) (*Folder, error) {
	r := d.svc.pol.Sessions
	lim := session.Limits{MaxFiles: int(r.MaxFiles.Value), MaxDepth: int(r.MaxDepth.Value)}
	f, err := session.OpenFolder(dir, lim, writable)
	if err != nil {
		return nil, d.answer(nil, dir, err)
	}
	return &Folder{d: d, f: f}, nil
}

// Dir is the folder, for Request.Workspace.
func (w *Folder) Dir() string { return w.f.Dir() }

// PutFile writes r to the folder's file p.
func (w *Folder) PutFile(p string, r io.Reader) (FileInfo, error) {
	fi, err := w.f.PutFile(p, r)
	return fi, w.d.answer(nil, w.f.Dir(), err)
}

// OpenFile opens the folder's file p for reading; close it. The entry
// carries no digest: a folder's files have no bound to hash within.
func (w *Folder) OpenFile(p string) (io.ReadCloser, FileEntry, error) {
	rc, e, err := w.f.OpenFile(p)
	return rc, e, w.d.answer(nil, w.f.Dir(), err)
}

// ListFiles lists the folder's sub ("" for all of it).
func (w *Folder) ListFiles(sub string) ([]FileEntry, error) {
	es, err := w.f.ListFiles(sub)
	return es, w.d.answer(nil, w.f.Dir(), err)
}

// Close releases the folder.
func (w *Folder) Close() error { return w.f.Close() }
