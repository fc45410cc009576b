package skill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Deps is what a skill needs on top of the runner image.
type Deps struct {
	// Python holds pip requirements in canonical form (see
	// CanonicalRequirement), sorted and without duplicates: the skill's
	// python_packages and the PEP 723 dependencies of every *.py file
	// under scripts/.
	Python []string
	// System holds Debian package names, sorted and without duplicates.
	System []string
	// RequiresPython holds each script's PEP 723 requires-python, in
	// script order.
	RequiresPython []PythonConstraint
	// Origins says where each entry of Python and System is declared:
	// "SKILL.md" or "scripts/report.py:4". Slices are in walk order.
	Origins map[string][]string
}

// PythonConstraint is one script's requires-python.
type PythonConstraint struct {
	// Spec is the specifier as written, e.g. ">=3.10".
	Spec string
	// Origin is "scripts/x.py:LINE".
	Origin string
}

// Empty reports whether the skill needs nothing beyond the runner image.
// A requires-python alone installs nothing, so it does not count.
func (d Deps) Empty() bool { return len(d.Python) == 0 && len(d.System) == 0 }

// Bounds on the walk of scripts/ for inline metadata: a skill is a folder
// of a few scripts, and a tree far larger than that is a mistake (a
// vendored virtualenv) that would make every run slow.
const maxScriptFiles = 10000

// skippedDirs are never searched for scripts with inline metadata: caches
// and vendored environments hold many .py files and no entry points.
var skippedDirs = []string{"__pycache__", "node_modules", "site-packages"}

// Dependencies collects the packages the skill needs: python_packages and
// system_packages from the frontmatter (either spelling) and the PEP 723
// `dependencies` of every *.py file under scripts/, recursively. Entries
// are checked (CanonicalRequirement, CheckSystemPackage), canonicalised,
// deduplicated and sorted, so the result, and the image built from it, do
// not depend on the order they were written in.
//
// Errors name the file and line: an *InlineMetadataError for a malformed
// block or an invalid requirement in one, an error matching
// ErrInvalidRequirement for a bad frontmatter entry.
func (s *Skill) Dependencies() (Deps, error) {
	acc := newDepsAccumulator()
	front := filepath.Base(s.Path)
	if front == "." || front == "" {
		front = "SKILL.md"
	}
	for _, p := range s.Manifest.PythonPackages {
		if err := acc.addPython(p, front); err != nil {
			return Deps{}, where.Errorf("%s: python_packages: %w", where.Path(s.Path), err)
		}
	}
	for _, p := range s.Manifest.SystemPackages {
		if err := CheckSystemPackage(p); err != nil {
			return Deps{}, where.Errorf("%s: system_packages: %w", where.Path(s.Path), err)
		}
		acc.add(acc.system, p, front)
	}
	scripts, err := pythonScripts(s.Dir)
	if err != nil {
		return Deps{}, err
	}
	for _, rel := range scripts {
		meta, err := ParseInlineMetadataFile(filepath.Join(s.Dir, rel))
		if err != nil {
			return Deps{}, err
		}
		if meta == nil {
			continue
		}
		for i, dep := range meta.Dependencies {
			origin := filepath.ToSlash(rel) + ":" + strconv.Itoa(meta.DependencyLines[i])
			if err := acc.addPython(dep, origin); err != nil {
				return Deps{}, &InlineMetadataError{Path: meta.Path, Line: meta.DependencyLines[i], Msg: err.Error()}
			}
		}
		if meta.RequiresPython != "" {
			acc.deps.RequiresPython = append(acc.deps.RequiresPython, PythonConstraint{
				Spec:   meta.RequiresPython,
				Origin: filepath.ToSlash(rel) + ":" + strconv.Itoa(meta.RequiresPythonLine),
			})
		}
	}
	return acc.result(), nil
}

type depsAccumulator struct {
	deps           Deps
	python, system map[string]bool
}

func newDepsAccumulator() *depsAccumulator {
	return &depsAccumulator{
		deps:   Deps{Origins: map[string][]string{}},
		python: map[string]bool{},
		system: map[string]bool{},
	}
}

func (a *depsAccumulator) addPython(req, origin string) error {
	canon, err := CanonicalRequirement(req)
	if err != nil {
		return err
	}
	a.add(a.python, canon, origin)
	return nil
}

func (a *depsAccumulator) add(set map[string]bool, v, origin string) {
	set[v] = true
	if !slices.Contains(a.deps.Origins[v], origin) {
		a.deps.Origins[v] = append(a.deps.Origins[v], origin)
	}
}

func (a *depsAccumulator) result() Deps {
	d := a.deps
	d.Python = sortedSet(a.python)
	d.System = sortedSet(a.system)
	return d
}

func sortedSet(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pythonScripts lists the *.py files under dir/scripts, relative to dir, in
// lexical order. Symlinks are followed only when they stay inside scripts/:
// one pointing elsewhere is not a script of this skill (policy refuses to
// run it), so its content has no say in the image.
func pythonScripts(dir string) ([]string, error) {
	root := filepath.Join(dir, "scripts")
	realRoot, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading scripts: %w", err)
	}
	var out []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading scripts: %w", err)
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skippedDirs, d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".py") {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 && !resolvesInside(path, realRoot) {
			return nil
		}
		if d.Type()&fs.ModeSymlink == 0 && !d.Type().IsRegular() {
			return nil
		}
		if len(out) >= maxScriptFiles {
			return where.Errorf("%s: %w: more than %d Python files under scripts/; keep vendored packages out of the skill and declare them as dependencies", where.Path(root), ErrTooLarge, maxScriptFiles)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return fmt.Errorf("reading scripts: %w", err)
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func resolvesInside(path, realRoot string) bool {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	fi, err := os.Stat(target)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	rel, err := filepath.Rel(realRoot, target)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
