package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// applier moves a staged layer into a workspace. Every step works on
// directory handles one element at a time and never follows a link: a
// link in the workspace where the layer needs a folder is replaced by the
// folder, as the run replaced it in its sandbox.
type applier struct {
	ws, stage *os.Root
	y         fsroot.Durability
	dirs      map[string]bool // folders whose entries changed, to fsync
	log       *changeLog
	delta     int64 // bytes of regular files added, less those removed
	entries   int   // entries added, less those removed (the store's count)
}

func (a *applier) apply(plan *layerPlan) error {
	for _, p := range sortedKeys(plan.whiteouts) {
		if err := a.remove(p); err != nil {
			return err
		}
	}
	for _, d := range sortedKeys(plan.opaque) {
		if err := a.clear(d); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(plan.ops) { // a folder sorts before what it holds
		if err := a.place(p, plan.ops[p]); err != nil {
			return fmt.Errorf("applying the run's change to %q: %w", p, err)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// remove deletes p (a whiteout). Nothing there, or no folder on the way,
// leaves nothing to delete.
func (a *applier) remove(p string) error {
	dir, base := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	parent, _, err := fsroot.Descend(a.ws, dir, false)
	if err != nil {
		return nil //nolint:nilerr // no folder there: nothing under it to delete
	}
	defer fsroot.CloseRoot(parent)
	return a.removeEntry(parent, dir, base)
}

// clear empties the folder d (an opaque whiteout) of everything but the
// store's temporary names.
func (a *applier) clear(d string) error {
	r, _, err := fsroot.Descend(a.ws, d, false)
	if err != nil {
		return nil //nolint:nilerr // no folder there: nothing to clear
	}
	defer fsroot.CloseRoot(r)
	names, err := fsroot.ReadDirNames(r)
	if err != nil {
		return fmt.Errorf("clearing %q: %w", d, err)
	}
	for _, n := range names {
		if fsroot.IsTemp(n) {
			continue
		}
		if err := a.removeEntry(r, d, n); err != nil {
			return err
		}
	}
	return nil
}

// removeEntry deletes name in parent (the folder dir), a folder with what
// it holds, logging every file and link that goes.
func (a *applier) removeEntry(parent *os.Root, dir, name string) error {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	shown := path.Join(dir, name)
	a.dirs[dir] = true
	if !fi.IsDir() {
		if err := parent.Remove(name); err != nil {
			return fmt.Errorf("deleting %q: %w", shown, err)
		}
		a.gone(shown, fi)
		return nil
	}
	// The folder's files are logged first, and its entries counted as the
	// store counts them (no temporary name); RemoveAll opens nothing
	// through a link.
	_ = fs.WalkDir(parent.FS(), name, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil //nolint:nilerr // what cannot be read is removed unlisted
		case fsroot.IsTemp(d.Name()) && d.IsDir():
			return fs.SkipDir
		case fsroot.IsTemp(d.Name()):
			return nil
		case d.IsDir():
			a.entries--
			return nil
		}
		if info, err := d.Info(); err == nil {
			a.gone(path.Join(dir, p), info)
		} else {
			a.entries--
		}
		return nil
	})
	if err := parent.RemoveAll(name); err != nil {
		return fmt.Errorf("deleting %q: %w", shown, err)
	}
	return nil
}

func (a *applier) gone(p string, fi fs.FileInfo) {
	if fi.Mode().IsRegular() {
		a.delta -= fi.Size()
	}
	a.entries--
	a.log.deleted(p)
}

// place gives p the state op says.
func (a *applier) place(p string, op *layerOp) error {
	dir, base := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	parent, err := a.mkdirs(dir)
	if err != nil {
		return err
	}
	defer fsroot.CloseRoot(parent)
	fi, err := parent.Lstat(base)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil {
		fi = nil
	}
	if op.kind == 'd' {
		return a.placeDir(parent, dir, base, op, fi)
	}
	if fi != nil && a.same(parent, base, op, fi) {
		return nil // a copy-up without a change: the file stays, shared as it was
	}
	existed := false
	if fi != nil && fi.IsDir() {
		if err := a.removeEntry(parent, dir, base); err != nil {
			return err
		}
	} else if fi != nil {
		existed = true
		if fi.Mode().IsRegular() {
			a.delta -= fi.Size()
		}
	}
	// renameat replaces a file or link whole: a reader sees the old one or
	// the new one, and a file shared with a snapshot is never written.
	if err := fsroot.RenameAt(a.stage, op.stage, parent, base); err != nil {
		return err
	}
	if !existed {
		a.entries++
	}
	a.dirs[dir] = true
	a.delta += op.size
	a.log.wrote(p, existed, op)
	return nil
}

func (a *applier) placeDir(parent *os.Root, dir, base string, op *layerOp, fi fs.FileInfo) error {
	mode := op.mode | 0o700 // the store must be able to manage what is in it
	switch {
	case fi != nil && fi.IsDir():
		if fi.Mode().Perm() == mode {
			return nil
		}
		return fsroot.ChmodNoFollow(parent, base, mode|fs.ModeDir)
	case fi != nil:
		if err := a.removeEntry(parent, dir, base); err != nil {
			return err
		}
	}
	if err := parent.Mkdir(base, mode); err != nil {
		return err
	}
	a.entries++
	a.dirs[dir] = true
	return fsroot.ChmodNoFollow(parent, base, mode|fs.ModeDir)
}

// same reports whether name already is what op would put there: the same
// link, or a regular file of the same mode and bytes.
func (a *applier) same(parent *os.Root, name string, op *layerOp, fi fs.FileInfo) bool {
	switch {
	case op.kind == 'l':
		t, err := parent.Readlink(name)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0 && t == op.target
	case !fi.Mode().IsRegular() || fi.Size() != op.size || fi.Mode().Perm() != op.mode:
		return false
	}
	f, _, err := openRegular(parent, name, name, false)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == op.sum
}

// mkdirs opens the folder dir, making what is missing; a file or link in
// the way is replaced by a folder (the run replaced it).
func (a *applier) mkdirs(dir string) (*os.Root, error) {
	cur, err := a.ws.OpenRoot(".")
	if err != nil || dir == "" {
		return cur, err
	}
	done := ""
	for _, name := range strings.Split(dir, "/") {
		fi, err := cur.Lstat(name)
		if err == nil && !fi.IsDir() {
			err = a.removeEntry(cur, done, name)
			if err == nil {
				err = fs.ErrNotExist
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			a.dirs[done] = true
			if err = cur.Mkdir(name, fsroot.DirPerm); err == nil {
				a.entries++
				err = fsroot.ChmodNoFollow(cur, name, fsroot.DirPerm|fs.ModeDir)
			}
			if err == nil {
				fi, err = cur.Lstat(name)
			}
		}
		done = path.Join(done, name)
		var next *os.Root
		if err == nil {
			next, err = fsroot.OpenSubdir(cur, name, fi)
		}
		fsroot.CloseRoot(cur)
		if err != nil {
			return nil, fmt.Errorf("making the folder %q: %w", done, err)
		}
		cur = next
	}
	return cur, nil
}

// sync makes the changed folders' entries durable, each once. A failure
// only puts durability in doubt: the changes are in place.
func (a *applier) sync() {
	for d := range a.dirs {
		if r, _, err := fsroot.Descend(a.ws, d, false); err == nil {
			_ = a.y.Dir(r)
			fsroot.CloseRoot(r)
		}
	}
}

// changeLog is a run's Result.Files, in the order the changes were made;
// a path deleted and written again is one modification.
type changeLog struct {
	at  map[string]int
	out []sandbox.FileChange
}

func newChangeLog() *changeLog { return &changeLog{at: map[string]int{}, out: []sandbox.FileChange{}} }

func (l *changeLog) deleted(p string) {
	if _, ok := l.at[p]; ok {
		return
	}
	l.at[p] = len(l.out)
	l.out = append(l.out, sandbox.FileChange{Path: p, Change: sandbox.FileDeleted})
}

func (l *changeLog) wrote(p string, existed bool, op *layerOp) {
	c := sandbox.FileChange{Path: p, Change: sandbox.FileCreated, Size: op.size, SHA256: op.sum}
	if op.kind == 'l' {
		c.Size = 0
	}
	if existed {
		c.Change = sandbox.FileModified
	}
	if i, ok := l.at[p]; ok {
		c.Change = sandbox.FileModified
		l.out[i] = c
		return
	}
	l.at[p] = len(l.out)
	l.out = append(l.out, c)
}

func (l *changeLog) list() []sandbox.FileChange { return l.out }
