package fsroot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Visit is called for every entry a walk meets: rel is its path under the root,
// parent the handle of its folder, fi its Lstat.
type Visit func(rel string, parent *os.Root, name string, fi fs.FileInfo) error

// Walk visits the entries under r (whose workspace path is prefix) depth
// first in name order, skipping the stores' temporary names (IsTemp). It descends
// only into real folders, each opened by handle and checked to be the
// folder that was listed (never a link swapped in), and not past maxDepth
// path elements: deeper entries cannot be named through the API either.
func Walk(r *os.Root, prefix string, maxDepth int, fn Visit) error {
	depth := 0
	if prefix != "" {
		depth = strings.Count(prefix, "/") + 1
	}
	if depth >= maxDepth {
		return nil
	}
	names, err := ReadDirNames(r)
	if err != nil {
		return err
	}
	for _, name := range names {
		if IsTemp(name) {
			continue
		}
		fi, err := r.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone since the listing
		}
		if err != nil {
			return err
		}
		rel := path.Join(prefix, name)
		if err := fn(rel, r, name, fi); err != nil {
			return err
		}
		if fi.IsDir() {
			sub, err := OpenSubdir(r, name, fi)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the listing (a run in progress)
			}
			if err != nil {
				return fmt.Errorf("listing %q: %w", rel, err)
			}
			err = Walk(sub, rel, maxDepth, fn)
			CloseRoot(sub)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadDirNames lists the names in r's folder, sorted; a folder removed
// meanwhile lists what was read.
func ReadDirNames(r *os.Root) ([]string, error) {
	d, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}
