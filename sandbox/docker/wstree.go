package docker

import (
	"github.com/sandboxrun/sandboxrun/sandbox"

	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// pageSize is what tmpfs charges a file at least.
const pageSize = 4096

// treeSize is what root's files take in a tmpfs: every regular file rounded
// up to whole pages. Symlinks are not followed. It stops counting once the
// total reaches limit.
func treeSize(root string, limit int64) (int64, error) {
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrPermission) && p != root:
			return skipUnreadable(d) // not copied either (writeTree)
		case err != nil:
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total += (fi.Size() + pageSize - 1) / pageSize * pageSize
			if total >= limit {
				return filepath.SkipAll
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%w: measure %s: %w", sandbox.ErrWorkspace, root, err)
	}
	return total, nil
}

// skipUnreadable passes over an entry the caller may not read.
func skipUnreadable(d fs.DirEntry) error {
	if d != nil && d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

// copied is what the copy into the sandbox held at a path, to tell what
// the script changed.
type copied struct {
	typ    byte // tar.TypeDir, TypeReg or TypeSymlink
	size   int64
	perm   int64
	mtime  time.Time
	target string
	// rootOwned: a set-id file of the caller's, shared read-only and
	// owned by root, so the script could replace it but not change it.
	rootOwned bool
}

// writeTree writes root's folders, regular files and symlinks (never
// followed) as a tar stream with paths relative to root, owned by uid:gid
// (the sandbox user), set-id bits dropped, and returns what it wrote, by
// relative path.
func writeTree(w io.Writer, root string, uid, gid int) (map[string]copied, error) {
	tw := tar.NewWriter(w)
	seen := map[string]copied{}
	// Files are opened through the root, so a symlink swapped in during
	// the walk cannot lead outside it.
	dir, err := os.OpenRoot(root)
	if err != nil {
		return seen, err
	}
	defer func() { _ = dir.Close() }() // read-only
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrPermission) && p != root:
			// The caller cannot read it, so neither may the sandbox; it
			// stays out of the copy (and out of the hand-back's deletions).
			return skipUnreadable(d)
		case err != nil:
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		h := &tar.Header{Name: rel, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Uid: uid, Gid: gid}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, rel+"/"
			seen[rel] = copied{typ: tar.TypeDir, perm: h.Mode}
			return tw.WriteHeader(h)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := dir.Readlink(rel)
			if err != nil {
				return err
			}
			if climbsOut(rel, target) {
				// The engine refuses the whole copy for such a link
				// ("invalid symlink"), so one a run left would fail every
				// later run; it stays on the host, out of the sandbox and
				// out of the hand-back's deletions, like an unreadable file.
				return nil
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
			seen[rel] = copied{typ: tar.TypeSymlink, target: target}
			return tw.WriteHeader(h)
		case d.Type().IsRegular():
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				// The caller's set-id files are shared read-only and
				// owned by root.
				h.Uid, h.Gid, h.Mode = 0, 0, int64(fi.Mode().Perm()&0o555)
			}
			f, err := dir.Open(rel)
			if errors.Is(err, fs.ErrPermission) {
				return nil
			}
			if err != nil {
				return err
			}
			defer f.Close()
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			seen[rel] = copied{typ: tar.TypeReg, size: fi.Size(), perm: h.Mode, mtime: fi.ModTime(), rootOwned: h.Uid == 0}
		}
		return nil // sockets, devices, fifos stay behind
	})
	if err != nil {
		return seen, err
	}
	return seen, tw.Close()
}

// climbsOut reports whether the relative symlink target, resolved from the
// folder of the link at rel (a path relative to the workspace), leaves the
// workspace.
func climbsOut(rel, target string) bool {
	if path.IsAbs(target) {
		return false
	}
	j := path.Join("/w", path.Dir(rel), target)
	return j != "/w" && !strings.HasPrefix(j, "/w/")
}

// errUnsafePath refuses a name in a returned tree that would leave the
// workspace.
var errUnsafePath = errors.New("unsafe path in the returned workspace")

// diffTree reads a tar stream of the sandbox's workspace and writes to w
// the layer of what changed since the copy in (before, begun at copiedAt):
// folders, files and links that are new or differ, and a whiteout for each
// that is gone (sandbox.ChangeApplier). It writes nothing into the
// caller's folder: the workspace's owner applies the layer.
//
// A file whose size, mode and modification time (whole seconds, as tar
// keeps them) did not change is left out, when it was last modified on the
// host over a second before copiedAt: any write in the sandbox would have
// given it a later time. A more recent one is sent whatever its time says;
// the applier leaves it alone when its bytes and mode are the same.
func diffTree(r io.Reader, w io.Writer, before map[string]copied, copiedAt time.Time) error {
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
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
		switch h.Typeflag {
		case tar.TypeDir:
			after[rel] = h.Typeflag
			if had && prev.typ == tar.TypeDir && prev.perm == h.Mode&0o777 {
				continue
			}
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: h.Mode & 0o777, ModTime: h.ModTime})
		case tar.TypeReg:
			after[rel] = h.Typeflag
			if had && prev.typ == tar.TypeReg && (unchanged(prev, h, copiedAt) || prev.rootOwned && h.Uid == 0) {
				continue // still the file copied in (a root-owned one cannot be written in the sandbox)
			}
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: h.Mode & 0o777, ModTime: h.ModTime, Size: h.Size})
			if err == nil {
				_, err = io.CopyN(tw, tr, h.Size)
			}
		case tar.TypeSymlink:
			after[rel] = h.Typeflag
			if had && prev.typ == tar.TypeSymlink && prev.target == h.Linkname {
				continue
			}
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: rel, Linkname: h.Linkname, ModTime: h.ModTime})
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
		dir, base := path.Split(rel)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dir + sandbox.WhiteoutPrefix + base, Mode: 0o644}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// coveredBy reports whether rel, gone from the returned tree, goes with
// an ancestor: one that is gone too (its whiteout covers what it held), or
// that is no longer a folder (the entry replacing it does).
func coveredBy(rel string, before map[string]copied, after map[string]byte) bool {
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
func unchanged(prev copied, h *tar.Header, copiedAt time.Time) bool {
	if !prev.mtime.Before(copiedAt.Add(-time.Second)) {
		return false
	}
	// Tar times have whole seconds: a write after copiedAt gives a later
	// second than one over a second before it, never the same.
	return prev.size == h.Size && prev.perm == h.Mode&0o777 && prev.mtime.Unix() == h.ModTime.Unix()
}
