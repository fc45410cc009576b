package docker

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/layer"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// errUnsafePath refuses a name in a returned tree that would leave the
// workspace.
var errUnsafePath = errors.New("unsafe path in the returned workspace")

// diffTree reads a tar stream of the sandbox's workspace and writes to w
// the layer of what changed since the copy in (before, begun at copiedAt):
// folders, files and links that are new or differ, and a whiteout for each
// that is gone (sandbox.ChangeApplier), written by layer.Writer (which
// leaves out a name a layer cannot carry). It writes nothing into the
// caller's folder: the workspace's owner applies the layer.
//
// A file whose size, mode and modification time (whole seconds, as tar
// keeps them) did not change is left out, when it was last modified on the
// host over a second before copiedAt: any write in the sandbox would have
// given it a later time. A more recent one is sent whatever its time says;
// the applier leaves it alone when its bytes and mode are the same.
func diffTree(r io.Reader, w io.Writer, before map[string]sandbox.Copied, copiedAt time.Time) error {
	tr := tar.NewReader(r)
	lw := layer.NewWriter(w)
	after := map[string]byte{} // what the returned tree holds, by path
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rel, ok := cleanRel(h.Name)
		if !ok {
			return fmt.Errorf("%w: %q", errUnsafePath, h.Name)
		}
		if rel == "" {
			continue
		}
		prev, had := before[rel]
		perm := fs.FileMode(h.Mode & 0o777) //nolint:gosec // masked to the permission bits first
		switch h.Typeflag {
		case tar.TypeDir:
			after[rel] = h.Typeflag
			if had && prev.Typ == tar.TypeDir && prev.Perm == h.Mode&0o777 {
				continue
			}
			err = lw.Dir(rel, perm, h.ModTime)
		case tar.TypeReg:
			after[rel] = h.Typeflag
			if had && prev.Typ == tar.TypeReg && (unchanged(prev, h, copiedAt) || prev.RootOwned && h.Uid == 0) {
				continue // still the file copied in (a root-owned one cannot be written in the sandbox)
			}
			err = lw.File(rel, perm, h.ModTime, h.Size, tr)
		case tar.TypeSymlink:
			after[rel] = h.Typeflag
			if had && prev.Typ == tar.TypeSymlink && prev.Target == h.Linkname {
				continue
			}
			err = lw.Symlink(rel, h.Linkname, h.ModTime)
		}
		// Anything else the script made (a fifo, a socket) stays behind.
		if err != nil {
			return err
		}
	}
	gone := make([]string, 0, len(before))
	for rel := range before {
		if _, ok := after[rel]; !ok && !coveredBy(rel, before, after) {
			gone = append(gone, rel)
		}
	}
	sort.Strings(gone)
	for _, rel := range gone {
		if err := lw.Whiteout(rel); err != nil {
			return err
		}
	}
	return lw.Close()
}

// coveredBy reports whether rel, gone from the returned tree, goes with
// an ancestor: one that is gone too (its whiteout covers what it held), or
// that is no longer a folder (the entry replacing it does).
func coveredBy(rel string, before map[string]sandbox.Copied, after map[string]byte) bool {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		typ, ok := after[d]
		if _, was := before[d]; was && !ok || ok && typ != tar.TypeDir {
			return true
		}
	}
	return false
}

// cleanRel turns a tar name into a clean slash path relative to the
// workspace; "" is the workspace itself.
func cleanRel(name string) (string, bool) {
	name = strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(name, "./")), "/")
	if name == "." {
		name = ""
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", false
		}
	}
	return name, true
}

// unchanged reports whether a file in the returned tree is the one copied
// in, by the quick check diffTree describes.
func unchanged(prev sandbox.Copied, h *tar.Header, copiedAt time.Time) bool {
	if !prev.MTime.Before(copiedAt.Add(-time.Second)) {
		return false
	}
	// Tar times have whole seconds: a write after copiedAt gives a later
	// second than one over a second before it, never the same.
	return prev.Size == h.Size && prev.Perm == h.Mode&0o777 && prev.MTime.Unix() == h.ModTime.Unix()
}
