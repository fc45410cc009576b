package doccheck

import (
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// skipDirs are never walked: version control, build output, installed
// dependencies, and test fixtures (which may be broken on purpose).
var skipDirs = map[string]bool{".git": true, "bin": true, "node_modules": true, "vendor": true, "testdata": true}

// Check walks the repository at root and returns every dead link in its
// Markdown files and every dead citation in its code, Makefile and script
// comments, sorted by file and line.
func Check(root string) ([]Problem, error) {
	c := docs{}
	var out []Problem
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			hidden := strings.HasPrefix(name, ".") && rel != "." && name != ".ci" && name != ".github"
			// This package's own comments show the citation forms by example.
			if rel != "." && (skipDirs[name] || hidden || rel == filepath.Join("internal", "doccheck")) {
				return filepath.SkipDir
			}
			return nil
		}
		var ps []Problem
		switch {
		case strings.HasSuffix(name, ".md"):
			ps, err = c.checkLinks(root, rel)
		case cites(rel):
			ps, err = c.checkCitations(root, rel)
		}
		out = append(out, ps...)
		return err
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

// cites says whether a file's comments are read for citations.
func cites(rel string) bool {
	name := filepath.Base(rel)
	switch filepath.Ext(name) {
	case ".go", ".sh", ".yaml", ".yml", ".py", ".ts", ".mk":
		return true
	}
	return name == "Makefile" || strings.HasPrefix(name, "Dockerfile") || rel == filepath.Join(".ci", "run")
}
