package skill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Bounds of the walk that finds skills under a root. A collection nests
// skills at most a few folders deep (plugins/<p>/skills/<s>, a category
// folder or two); the bounds keep a root such as a home folder from being
// read whole.
const (
	maxWalkDepth = 6
	maxWalkDirs  = 20000
)

// walkDirLimit is maxWalkDirs; tests lower it.
var walkDirLimit = maxWalkDirs

// ErrWalkBound means a root held more folders than the walk reads; the
// skills found before the bound are still returned.
var ErrWalkBound = errors.New("too many folders under the skills root")

// walkHidden are the hidden folders collections keep skills in; every other
// folder whose name starts with "." is skipped, as are folders that hold
// installed code rather than skills.
var (
	walkHidden = map[string]bool{".claude": true, ".agents": true, ".github": true}
	walkSkip   = map[string]bool{"node_modules": true, "__pycache__": true, "venv": true, "site-packages": true}
)

// skillDirs returns the skill folders under root, in lexical path order: root
// itself when it holds a SKILL.md (a repository that is one skill), else
// every folder below it that holds one, found by walking at most
// maxWalkDepth folders deep. Layouts this covers: <root>/<skill>,
// plugins/<p>/skills/<skill>, .claude/skills/<skill>, and category folders.
// A skill's own subfolders are not searched (its assets may hold SKILL.md
// templates), nor is a store of uploaded skills (a folder holding
// UploadStoreMarker), which is reported in notes. A symlinked folder is
// followed only when it resolves inside root, and each folder is read once;
// a symlink out of root to a skill is reported in notes. The walk stops after maxWalkDirs folders, returning what
// it found with an error wrapping ErrWalkBound.
func skillDirs(root string) (dirs []string, notes []error, err error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, fmt.Errorf("listing skills: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("listing skills: %w", err)
	}
	if !fi.IsDir() {
		return nil, nil, where.Errorf("listing skills in %s: %w", where.Path(abs), ErrNotDir)
	}
	if isUploadStore(abs) {
		return nil, []error{uploadStoreNote(abs)}, nil
	}
	if _, err := FindFile(abs); err == nil {
		return []string{abs}, nil, nil
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("listing skills: %w", err)
	}
	w := &walker{realRoot: real, seen: map[string]bool{real: true}}
	err = w.walk(abs, 0)
	return w.found, w.notes, err
}

type walker struct {
	realRoot string
	seen     map[string]bool
	visited  int
	found    []string
	notes    []error
}

func (w *walker) walk(dir string, depth int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if depth == 0 {
			return fmt.Errorf("listing skills: %w", err)
		}
		return nil // an unreadable folder below the root holds no skill we can run
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		name := e.Name()
		if (strings.HasPrefix(name, ".") && !walkHidden[name]) || walkSkip[name] {
			continue
		}
		sub := filepath.Join(dir, name)
		if !w.enter(sub, e) {
			continue
		}
		if w.visited++; w.visited > walkDirLimit {
			return where.Errorf("%w: stopped after %d folders under %s; point --skills at the folder that holds the skills", ErrWalkBound, walkDirLimit, where.Path(w.realRoot))
		}
		if isUploadStore(sub) {
			w.notes = append(w.notes, uploadStoreNote(sub))
			continue
		}
		if _, err := FindFile(sub); err == nil {
			w.found = append(w.found, sub)
			continue
		}
		if depth+1 < maxWalkDepth {
			if err := w.walk(sub, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// enter reports whether the walk goes into sub: a folder, or a symlink to a
// folder inside the root, not read before.
func (w *walker) enter(sub string, e fs.DirEntry) bool {
	switch {
	case e.IsDir():
	case e.Type()&fs.ModeSymlink != 0:
		fi, err := os.Stat(sub)
		if err != nil || !fi.IsDir() {
			return false
		}
	default:
		return false
	}
	real, err := filepath.EvalSymlinks(sub)
	if err != nil || w.seen[real] {
		return false
	}
	if !within(w.realRoot, real) {
		if _, err := FindFile(real); err == nil {
			w.notes = append(w.notes, where.Errorf("%s: not followed: the symlink leads to %s, outside the skills root %s; add that folder as a root (--skills A:B) or move the skill in", where.Path(sub), where.Path(real), where.Path(w.realRoot)))
		}
		return false
	}
	w.seen[real] = true
	return true
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
