package docker

import (
	"github.com/sandboxrun/sandboxrun/sandbox"

	"archive/tar"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// tempPrefix starts the names of the hand-back's temporary files and links
// in the workspace. It is the session store's reserved prefix
// (session.TempPrefix; a test keeps the two equal), so in a session whose
// hand-back a crash cut short they are never listed, and are removed when
// the store next opens, like an interrupted upload's.
const tempPrefix = ".sandboxrun-upload-"

// errUnsafePath refuses a name in a returned tree that would leave the
// workspace.
var errUnsafePath = errors.New("unsafe path in the returned workspace")

// readTree applies a tar stream of the sandbox's workspace to root: folders
// are created, files and symlinks replaced whole (written to a temporary
// name, then renamed, so no reader ever sees half a file), set-id bits
// dropped, nothing outside root touched and no symlink on the host followed.
// Files and links that were in before but are gone from the stream are
// removed: the script deleted them. A file whose size and modification time
// (whole seconds, as tar keeps them) did not change is left alone, when it
// was last modified on the host over a second before copiedAt: any write in
// the sandbox would have given it a later time.
//
// It returns what it changed, in the order applied: the Result's files.
func readTree(r io.Reader, root string, before map[string]bool, copiedAt time.Time) ([]sandbox.FileChange, error) {
	tr := tar.NewReader(r)
	after := map[string]bool{}
	changes := []sandbox.FileChange{}
	changed := func(rel string, size int64, sum string) {
		kind := sandbox.FileCreated
		if before[rel] {
			kind = sandbox.FileModified
		}
		changes = append(changes, sandbox.FileChange{Path: rel, Change: kind, Size: size, SHA256: sum})
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return changes, err
		}
		rel, ok := cleanRel(h.Name)
		if !ok {
			return changes, fmt.Errorf("%w: %q", errUnsafePath, h.Name)
		}
		if rel == "" {
			continue
		}
		dst := filepath.Join(root, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := ensureDir(root, rel, h.FileInfo().Mode().Perm()); err != nil {
				return changes, err
			}
		case tar.TypeReg:
			after[rel] = true
			if err := ensureDir(root, path.Dir(rel), 0o755); err != nil {
				return changes, err
			}
			if unchanged(dst, h, copiedAt) || isSetID(dst) {
				continue
			}
			// A file touched on the host just before the copy in (an
			// upload a moment ago) is written back whatever its time says;
			// it is a change only if its bytes or mode differ.
			prev := digestIfSame(dst, h)
			sum := sha256.New()
			if err := replaceFile(dst, h.FileInfo().Mode().Perm(), h.ModTime, io.TeeReader(tr, sum)); err != nil {
				return changes, err
			}
			if digest := hex.EncodeToString(sum.Sum(nil)); digest != prev {
				changed(rel, h.Size, digest)
			}
		case tar.TypeSymlink:
			after[rel] = true
			if err := ensureDir(root, path.Dir(rel), 0o755); err != nil {
				return changes, err
			}
			if cur, err := os.Readlink(dst); err == nil && cur == h.Linkname {
				continue
			}
			if err := replaceLink(dst, h.Linkname); err != nil {
				return changes, err
			}
			changed(rel, 0, "")
		}
	}
	gone := make([]string, 0, len(before))
	for rel := range before {
		if !after[rel] {
			gone = append(gone, rel)
		}
	}
	sort.Strings(gone)
	for _, rel := range gone {
		if err := ensureDir(root, path.Dir(rel), 0); err != nil {
			// Its folder went too, or became something else: the file is
			// gone from where it was all the same.
			changes = append(changes, sandbox.FileChange{Path: rel, Change: sandbox.FileDeleted})
			continue
		}
		if isSetID(filepath.Join(root, filepath.FromSlash(rel))) {
			continue
		}
		err := os.Remove(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return changes, err
		}
		changes = append(changes, sandbox.FileChange{Path: rel, Change: sandbox.FileDeleted})
	}
	return changes, nil
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

// ensureDir makes every component of rel under root a real folder: a
// symlink or file in the way is replaced (the script replaced it inside the
// sandbox), so no later write follows a link out of root. perm 0 only
// checks, creating nothing.
func ensureDir(root, rel string, perm os.FileMode) error {
	if rel == "." || rel == "" {
		return nil
	}
	cur := root
	for _, part := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		switch {
		case err == nil && fi.IsDir():
			continue
		case perm == 0:
			return fmt.Errorf("%s is not a folder", cur)
		case err == nil:
			if err := os.RemoveAll(cur); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := os.Mkdir(cur, perm|0o700); err != nil {
			return err
		}
	}
	return nil
}

// isSetID reports whether p is a set-id regular file of the caller's: the
// hand-back never replaces or removes one.
func isSetID(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0
}

func unchanged(dst string, h *tar.Header, copiedAt time.Time) bool {
	fi, err := os.Lstat(dst)
	if err != nil || !fi.ModTime().Before(copiedAt.Add(-time.Second)) {
		return false
	}
	// Tar times have whole seconds.
	d := fi.ModTime().Sub(h.ModTime)
	return fi.Mode().IsRegular() && fi.Size() == h.Size && d < time.Second && d > -time.Second &&
		fi.Mode().Perm() == h.FileInfo().Mode().Perm()
}

// digestIfSame returns the hex SHA-256 of dst when it is a regular file of
// h's size and mode (it may be h's content again), else "". Only a file the
// quick check could not vouch for is read, so this costs a second read of
// recent files alone.
func digestIfSame(dst string, h *tar.Header) string {
	fi, err := os.Lstat(dst)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != h.Size || fi.Mode().Perm() != h.FileInfo().Mode().Perm() {
		return ""
	}
	f, err := os.OpenFile(dst, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return ""
	}
	return hex.EncodeToString(sum.Sum(nil))
}

func replaceFile(dst string, perm os.FileMode, mtime time.Time, r io.Reader) error {
	f, err := os.CreateTemp(filepath.Dir(dst), tempPrefix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = io.Copy(f, r)
	err = errors.Join(err, f.Chmod(perm), f.Close())
	if err == nil {
		err = os.Chtimes(tmp, mtime, mtime)
	}
	if err == nil {
		err = replace(tmp, dst)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

func replaceLink(dst, target string) error {
	var r [8]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand)
	// Not named after dst: a name near NAME_MAX would make it too long.
	tmp := filepath.Join(filepath.Dir(dst), tempPrefix+"link-"+hex.EncodeToString(r[:]))
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := replace(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// replace renames tmp over dst; a folder at dst (the script replaced it with
// a file) is removed first.
func replace(tmp, dst string) error {
	if fi, err := os.Lstat(dst); err == nil && fi.IsDir() {
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}
