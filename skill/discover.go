package skill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Discover loads the metadata (not the bodies) of every immediate subfolder
// of root that holds a SKILL.md, sorted by name. A broken skill, or a second
// skill claiming a name already taken, becomes an error in the second result
// and is left out; only an unreadable root leaves the first result empty.
func Discover(root string) ([]*Skill, []error) {
	dirs, err := skillDirs(root)
	if err != nil {
		return nil, []error{err}
	}
	var skills []*Skill
	var errs []error
	for _, dir := range dirs {
		s, err := LoadMeta(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		skills = append(skills, s)
	}
	// Among skills with the same name the one in the folder of that name
	// wins: it is the one Resolve finds by name.
	sort.SliceStable(skills, func(i, j int) bool {
		a, b := skills[i], skills[j]
		if a.Manifest.Name != b.Manifest.Name {
			return a.Manifest.Name < b.Manifest.Name
		}
		return folderMatches(filepath.Base(a.Dir), a.Manifest.Name) && !folderMatches(filepath.Base(b.Dir), b.Manifest.Name)
	})
	out := skills[:0]
	for _, s := range skills {
		if n := len(out); n > 0 && out[n-1].Manifest.Name == s.Manifest.Name {
			errs = append(errs, fmt.Errorf("%s: skill name %q is already used by %s; names must be unique, rename one of them",
				s.Path, s.Manifest.Name, out[n-1].Dir))
			continue
		}
		out = append(out, s)
	}
	return out, errs
}

// skillDirs lists the immediate subfolders of root (symlinks followed,
// hidden ones skipped) that contain a SKILL.md, in lexical order.
func skillDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("listing skills: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := FindFile(dir); err != nil {
			continue
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// Resolve turns a skill reference into the absolute skill folder. A ref that
// contains a slash, is absolute, or is "." or ".." is a path; anything else is
// the name of a folder under root.
func Resolve(root, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("%w: the skill reference is empty; give a skill name or a path to a skill folder", ErrSkillNotFound)
	}
	isPath := strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) ||
		ref == "." || ref == ".." || filepath.IsAbs(ref)
	dir := ref
	if !isPath {
		dir = filepath.Join(root, ref)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving skill %q: %w", ref, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist) && isPath:
		return "", fmt.Errorf("%w: %s does not exist", ErrSkillNotFound, abs)
	case errors.Is(err, os.ErrNotExist):
		return "", notFoundByName(root, ref)
	case err != nil:
		return "", fmt.Errorf("resolving skill %q: %w", ref, err)
	case !fi.IsDir():
		return "", fmt.Errorf("resolving skill %q: %s: %w: give the skill's folder, not a file in it", ref, abs, ErrNotDir)
	}
	if _, err := FindFile(abs); err != nil {
		return "", fmt.Errorf("resolving skill %q: %w", ref, err)
	}
	return abs, nil
}
