package skill

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// SplitRoots reads a list of skills roots, ':'-separated as in PATH
// (--skills a:b, $SANDBOXRUN_SKILLS); empty entries are dropped.
func SplitRoots(list string) []string {
	var roots []string
	for _, r := range filepath.SplitList(list) {
		if r = strings.TrimSpace(r); r != "" {
			roots = append(roots, r)
		}
	}
	return roots
}

// DuplicateError reports two skills with the same name. Kept is the one a
// name refers to: the one under the earlier root, else the one in the folder
// of that name, else the first in path order. Other is shadowed.
type DuplicateError struct {
	Name        string
	Kept, Other string // skill folders
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%s: skill name %q is already used by %s, which the name refers to; rename one of them, or run this one by its path", e.Other, e.Name, e.Kept)
}

// catalog is every skill under a list of roots.
type catalog struct {
	// skills are the ones names refer to, sorted by name.
	skills []*Skill
	// dups are the shadowed skills, by name.
	dups map[string][]*DuplicateError
	// broken maps the folder of a skill that does not load to its error.
	broken map[string]error
	// problems are every error and note, in walk order, duplicates last.
	problems []error
}

// Discover loads the metadata (not the bodies) of every skill under the
// roots, in the layouts skillDirs walks, and returns one skill per name,
// sorted by name. Everything else is reported in the second result without
// stopping the listing: a skill that does not load, a second skill of a name
// already taken (a *DuplicateError; the first root wins, then the folder of
// that name), a symlink that leads out of its root, an unreadable root, a
// root too large to walk whole.
func Discover(roots ...string) ([]*Skill, []error) {
	c := discover(roots)
	return c.skills, c.problems
}

func discover(roots []string) *catalog {
	type found struct {
		s     *Skill
		root  int
		order int
	}
	c := &catalog{dups: map[string][]*DuplicateError{}, broken: map[string]error{}}
	var all []found
	seenDir := map[string]bool{}
	for ri, root := range roots {
		dirs, notes, err := skillDirs(root)
		c.problems = append(c.problems, notes...)
		if err != nil {
			c.problems = append(c.problems, err)
		}
		for _, dir := range dirs {
			if seenDir[dir] {
				continue // roots that overlap reach a folder twice
			}
			seenDir[dir] = true
			s, err := LoadMeta(dir)
			if err != nil {
				c.broken[dir] = err
				c.problems = append(c.problems, err)
				continue
			}
			all = append(all, found{s: s, root: ri, order: len(all)})
		}
	}
	slices.SortStableFunc(all, func(a, b found) int {
		if n := strings.Compare(a.s.Manifest.Name, b.s.Manifest.Name); n != 0 {
			return n
		}
		if n := cmp.Compare(a.root, b.root); n != 0 {
			return n
		}
		am, bm := folderMatches(filepath.Base(a.s.Dir), a.s.Manifest.Name), folderMatches(filepath.Base(b.s.Dir), b.s.Manifest.Name)
		if am != bm {
			if am {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.order, b.order)
	})
	for _, f := range all {
		if n := len(c.skills); n > 0 && c.skills[n-1].Manifest.Name == f.s.Manifest.Name {
			d := &DuplicateError{Name: f.s.Manifest.Name, Kept: c.skills[n-1].Dir, Other: f.s.Dir}
			c.dups[d.Name] = append(c.dups[d.Name], d)
			c.problems = append(c.problems, d)
			continue
		}
		c.skills = append(c.skills, f.s)
	}
	return c
}

// Located is a skill reference resolved to a folder.
type Located struct {
	// Dir is the skill folder, absolute.
	Dir string
	// Warnings are what the caller should tell the user: the reference
	// matched more than one skill, and which one it took.
	Warnings []string
}

// Locate resolves a skill reference against the roots. A ref that contains
// a slash, is absolute, or is "." or ".." is a path to the skill folder.
// Anything else is a name: the frontmatter name of a skill under the roots,
// else the name of a skill's folder. When several skills answer to it, the
// one Discover keeps is taken and the others are named in Warnings.
func Locate(roots []string, ref string) (Located, error) {
	if ref == "" {
		return Located{}, fmt.Errorf("%w: the skill reference is empty; give a skill name or a path to a skill folder", ErrSkillNotFound)
	}
	if isPathRef(ref) {
		dir, err := resolvePath(ref)
		return Located{Dir: dir}, err
	}
	c := discover(roots)
	for _, s := range c.skills {
		if s.Manifest.Name == ref {
			loc := Located{Dir: s.Dir}
			for _, d := range c.dups[ref] {
				loc.Warnings = append(loc.Warnings, fmt.Sprintf("another skill named %q, %s, is shadowed by %s; rename one, or run it by its path", ref, d.Other, d.Kept))
			}
			return loc, nil
		}
	}
	var byFolder []string
	for _, s := range c.skills {
		if folderMatches(filepath.Base(s.Dir), normalizeName(ref)) || filepath.Base(s.Dir) == ref {
			byFolder = append(byFolder, s.Dir)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(c.broken)) {
		if filepath.Base(dir) == ref {
			return Located{}, fmt.Errorf("resolving skill %q: %w", ref, c.broken[dir])
		}
	}
	if len(byFolder) > 0 {
		loc := Located{Dir: byFolder[0]}
		for _, other := range byFolder[1:] {
			loc.Warnings = append(loc.Warnings, fmt.Sprintf("the folder name %q also names %s; using %s, run the other by its path", ref, other, byFolder[0]))
		}
		return loc, nil
	}
	for _, root := range roots {
		// A folder of that name that is no skill says why better than
		// "not found".
		if fi, err := os.Stat(filepath.Join(root, ref)); err == nil && fi.IsDir() {
			if _, err := FindFile(filepath.Join(root, ref)); err != nil {
				return Located{}, fmt.Errorf("resolving skill %q: %w", ref, err)
			}
		}
	}
	return Located{}, notFoundByName(roots, ref, c.skills)
}

// Resolve is Locate with one root, returning the folder only.
func Resolve(root, ref string) (string, error) {
	loc, err := Locate([]string{root}, ref)
	return loc.Dir, err
}

func isPathRef(ref string) bool {
	return strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) ||
		ref == "." || ref == ".." || filepath.IsAbs(ref)
}

// resolvePath turns a path reference into the absolute skill folder.
func resolvePath(ref string) (string, error) {
	abs, err := filepath.Abs(ref)
	if err != nil {
		return "", fmt.Errorf("resolving skill %q: %w", ref, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", where.Errorf("%w: %s does not exist", ErrSkillNotFound, where.Path(abs))
	case err != nil:
		return "", fmt.Errorf("resolving skill %q: %w", ref, err)
	case !fi.IsDir():
		return "", where.Errorf("resolving skill %q: %s: %w: give the skill's folder, not a file in it", ref, where.Path(abs), ErrNotDir)
	}
	if _, err := FindFile(abs); err != nil {
		return "", fmt.Errorf("resolving skill %q: %w", ref, err)
	}
	return abs, nil
}
