package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// entryOf describes one entry; with hash, files are hashed through a
// no-follow handle.
func entryOf(rel string, parent *os.Root, name string, fi fs.FileInfo, hash bool) (Entry, bool, error) {
	e := Entry{Path: rel, Modified: fi.ModTime()}
	switch {
	case fi.IsDir():
		e.Type = TypeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := parent.Readlink(name)
		if err != nil {
			return e, false, nil // gone or changed since the listing
		}
		e.Type, e.Target, e.Size = TypeSymlink, target, int64(len(target))
	case fi.Mode().IsRegular():
		f, fe, err := openRegular(parent, name, rel, hash)
		if err != nil {
			return e, false, nil // replaced since the listing: not shown
		}
		f.Close()
		fe.Modified = fi.ModTime()
		return fe, true, nil
	default:
		return e, false, nil // fifos, sockets, devices: nothing the API serves
	}
	return e, true, nil
}

// ListFiles lists the workspace (sub ""), or the folder sub, recursively,
// sorted by path; if sub is a file or a link, just that entry. More than
// MaxFiles entries (a run can make them) is a *LimitError, not a cut list. Links are
// shown with their target and never followed; the store's temporary files
// are never listed.
func (s *Store) ListFiles(owner, id, sub string) ([]Entry, error) {
	clean, err := checkSub(sub, s.lim.MaxDepth)
	if err != nil {
		return nil, err
	}
	var out []Entry
	err = s.read(owner, id, func(ws *os.Root) error {
		out, err = listFiles(ws, clean, s.lim, true)
		return err
	})
	return out, err
}

// checkSub checks the folder a listing starts at: "" is the whole
// workspace, anything else a path CheckPath accepts.
func checkSub(sub string, maxDepth int) (string, error) {
	if sub == "" {
		return "", nil
	}
	return fsroot.CheckPath(sub, maxDepth)
}

// listFiles lists clean ("" for all of ws) in ws as ListFiles describes,
// within lim's MaxFiles and MaxDepth; with hash, files carry their SHA256.
func listFiles(ws *os.Root, clean string, lim Limits, hash bool) ([]Entry, error) {
	var out []Entry
	add := func(rel string, parent *os.Root, name string, fi fs.FileInfo) error {
		if len(out) >= lim.MaxFiles { // a run may have made more than uploads may
			return &LimitError{Limit: LimitMaxFiles, Value: int64(lim.MaxFiles),
				Hint: "the workspace holds more entries than a listing returns: list a sub folder, delete files, or raise sessions.max_files in the operator policy"}
		}
		e, ok, err := entryOf(rel, parent, name, fi, hash)
		if ok {
			out = append(out, e)
		}
		return err
	}
	start, err := listStart(ws, clean, add)
	if err == nil && start != nil {
		err = fsroot.Walk(start, clean, lim.MaxDepth, add)
		fsroot.CloseRoot(start)
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// listStart resolves where a listing starts: the folder to walk, or nil
// after handing a single non-folder entry to fn.
func listStart(ws *os.Root, clean string, fn fsroot.Visit) (*os.Root, error) {
	if clean == "" {
		return ws.OpenRoot(".")
	}
	dir, base := path.Split(clean)
	parent, _, err := fsroot.Descend(ws, dir, false)
	if err != nil {
		return nil, err
	}
	defer fsroot.CloseRoot(parent)
	fi, err := parent.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q", ErrFileNotFound, clean)
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fn(clean, parent, base, fi)
	}
	return fsroot.OpenSubdir(parent, base, fi)
}
