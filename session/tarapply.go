package session

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/fsmode"
)

// applyTar moves a staged tar into the workspace. Every conflict is found
// before anything moves (the session is held, so nothing else changes the
// workspace meanwhile); an I/O failure while moving undoes the moves made.
// It returns the change in bytes and in entries.
func (s *Store) applyTar(ss *sess, ws, stage *os.Root, plan *tarPlan) (int64, int, error) {
	paths := make([]string, 0, len(plan.kind))
	for p := range plan.kind {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a folder sorts before what is in it

	exists := map[string]bool{}
	var delta int64
	added := 0
	for _, p := range paths {
		_, fi, err := probe(ws, p)
		if err != nil {
			return 0, 0, err
		}
		isDir := plan.kind[p] == 'd'
		switch {
		case fi == nil:
			added++
		case isDir && !fi.IsDir():
			return 0, 0, badPath(p, "the tar has a folder where the workspace has %s: delete it first", fsmode.Describe(fi.Mode()))
		case !isDir && fi.IsDir():
			return 0, 0, badPath(p, "the tar has a file where the workspace has a folder: delete the folder first")
		case !isDir && fi.Mode().IsRegular():
			delta -= fi.Size()
		}
		exists[p] = fi != nil
		if !isDir {
			delta += plan.files[p].size
		}
	}
	if err := s.checkEntries(ss, added); err != nil {
		return 0, 0, err
	}

	var done []moved
	dirs := map[string]bool{"": true} // folders whose entries changed
	for i, p := range paths {
		dirs[path.Dir("/" + p)[1:]] = true
		m, err := moveIn(ws, stage, p, plan, exists[p], i)
		if m.path != "" {
			done = append(done, m)
		}
		if err != nil {
			undo(ws, stage, done)
			return 0, 0, fmt.Errorf("unpacking the tar at %q: %w", p, err)
		}
	}
	// Each changed folder fsynced once (not syncfs: that would flush every
	// other writer on the file system too).
	for d := range dirs {
		r, _, err := fsroot.Descend(ws, d, false)
		if err == nil {
			err = s.syncDir(r)
			fsroot.CloseRoot(r)
		}
		if err != nil { // the files are in place; only their durability is in doubt
			s.opt.logger.Warn("tar upload not fsynced", "session_id", ss.id, "folder", d, "error", err)
		}
	}
	return delta, added, nil
}

// moved is one step of applyTar, kept to undo it.
type moved struct {
	path   string
	dir    bool   // a folder made
	backup string // a file or link replaced, moved aside in the stage
}

// moveFault, when set (tests only), fails moving p in, to exercise undo.
var moveFault func(p string) error

func moveIn(ws, stage *os.Root, p string, plan *tarPlan, existed bool, i int) (moved, error) {
	if moveFault != nil {
		if err := moveFault(p); err != nil {
			return moved{}, err
		}
	}
	if plan.kind[p] == 'd' {
		if existed {
			return moved{}, nil
		}
		parent, made, err := fsroot.Descend(ws, p, true)
		if parent != nil {
			fsroot.CloseRoot(parent)
		}
		if len(made) > 0 {
			return moved{path: p, dir: true}, err
		}
		return moved{}, err
	}
	dir, base := path.Split(p)
	parent, _, err := fsroot.Descend(ws, dir, false) // made earlier: folders sort first
	if err != nil {
		return moved{}, err
	}
	defer fsroot.CloseRoot(parent)
	m := moved{path: p}
	if existed {
		m.backup = "b" + strconv.Itoa(i)
		if err := fsroot.RenameAt(parent, base, stage, m.backup); err != nil {
			return moved{}, err
		}
	}
	if err := fsroot.RenameAt(stage, plan.files[p].name, parent, base); err != nil {
		if m.backup != "" {
			_ = fsroot.RenameAt(stage, m.backup, parent, base)
		}
		return moved{}, err
	}
	return m, nil
}

// undo reverses moves, last first: files placed are removed and what they
// replaced put back; folders made are removed.
func undo(ws, stage *os.Root, done []moved) {
	for i := len(done) - 1; i >= 0; i-- {
		m := done[i]
		if m.dir {
			_ = ws.Remove(m.path)
			continue
		}
		dir, base := path.Split(m.path)
		parent, _, err := fsroot.Descend(ws, dir, false)
		if err != nil {
			continue
		}
		err = parent.Remove(base)
		if m.backup != "" && (err == nil || errors.Is(err, errNotExist)) {
			_ = fsroot.RenameAt(stage, m.backup, parent, base)
		}
		fsroot.CloseRoot(parent)
	}
}
