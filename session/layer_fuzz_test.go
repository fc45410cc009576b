package session

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// FuzzApplyChanges feeds arbitrary layers to a session's applier: nothing
// outside the workspace may change, a layer refused as malformed or past a
// limit changes nothing, and every change reported is true of the
// workspace afterwards.
func FuzzApplyChanges(f *testing.F) {
	f.Add(tarBytes(f, tarFile{name: "a/b.txt", body: "hello"}, tarFile{name: "c/", typ: tar.TypeDir}))
	f.Add(tarBytes(f, tarFile{name: ".wh.keep"}, tarFile{name: "keep/.wh..wh..opq"}))
	f.Add(tarBytes(f, tarFile{name: "link/.wh.secret"}, tarFile{name: "link/x", body: "x"}))
	f.Add(tarBytes(f, tarFile{name: "keep", body: "file now"}))
	f.Add(tarBytes(f, tarFile{name: "l", typ: tar.TypeSymlink, link: "/etc"}, tarFile{name: "m", typ: tar.TypeLink, link: "keep/file"}))
	f.Add(tarBytes(f, tarFile{name: "../x", body: "x"}))
	f.Add(tarBytes(f, tarFile{name: ".wh..wh..opq"}, tarFile{name: "n", body: "n"}))
	f.Add([]byte("garbage"))
	dir := f.TempDir()
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("top secret"), 0o600); err != nil {
		f.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "root"), Limits{Quota: 1 << 20, MaxFiles: 64, MaxDepth: 8}, withoutSync())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	outBefore := treeHash(f, outside)

	f.Fuzz(func(t *testing.T, data []byte) {
		id := create(t, s)
		defer func() {
			if err := s.Delete(owner, id); err != nil {
				t.Fatal(err)
			}
		}()
		put(t, s, id, "keep/file", "keep")
		if err := os.Symlink("../../../outside", filepath.Join(wsPath(s, id), "link")); err != nil {
			t.Fatal(err)
		}
		before := treeHash(t, wsPath(s, id))
		changes, err := applyTo(t, s, id, data)
		switch {
		case errors.Is(err, ErrBadLayer) || errors.Is(err, ErrLimit):
			if treeHash(t, wsPath(s, id)) != before {
				t.Fatalf("refused layer (%v) changed the workspace", err)
			}
		case err != nil:
			t.Fatalf("a layer failed other than as refused: %v", err)
		}
		for _, c := range changes {
			fi, lerr := os.Lstat(filepath.Join(wsPath(s, id), filepath.FromSlash(c.Path)))
			switch {
			case c.Change == sandbox.FileDeleted:
				if lerr == nil && !fi.IsDir() {
					t.Fatalf("%q reported deleted is still there", c.Path)
				}
			case lerr != nil:
				t.Fatalf("%q reported %s is missing: %v", c.Path, c.Change, lerr)
			case c.SHA256 != "":
				b, err := os.ReadFile(filepath.Join(wsPath(s, id), filepath.FromSlash(c.Path)))
				if err != nil || sum(string(b)) != c.SHA256 || int64(len(b)) != c.Size {
					t.Fatalf("%q: reported %+v, stored %d bytes (%v)", c.Path, c, len(b), err)
				}
			}
		}
		if treeHash(t, outside) != outBefore {
			t.Fatal("something outside the store changed")
		}
		requireNoTemp(t, s, id)
		if _, err := applyTo(t, s, id, nil); err != nil {
			t.Fatalf("an empty layer: %v", err)
		}
	})
}
