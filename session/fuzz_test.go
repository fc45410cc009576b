package session

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func tarBytes(t testing.TB, files ...tarFile) []byte {
	b, err := io.ReadAll(tarOf(t, files...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzPutTar feeds arbitrary bytes to PutTar: it must never touch anything
// outside the session's workspace, and either succeed fully (every file it
// reports is there, byte for byte) or leave the workspace as it was.
func FuzzPutTar(f *testing.F) {
	f.Add(tarBytes(f, tarFile{name: "a/b.txt", body: "hello"}, tarFile{name: "c/", typ: tar.TypeDir}))
	f.Add(tarBytes(f, tarFile{name: "../x", body: "x"}))
	f.Add(tarBytes(f, tarFile{name: "link/x", body: "x"}))
	f.Add(tarBytes(f, tarFile{name: "keep/file/x", body: "x"}))
	f.Add(tarBytes(f, tarFile{name: "l", typ: tar.TypeSymlink, link: "/etc"}))
	f.Add(tarBytes(f, tarFile{name: "x", body: "1"}, tarFile{name: "x/y", body: "2"}))
	f.Add(tarBytes(f, tarFile{name: strings.Repeat("d/", 40) + "f", body: "deep", forma: tar.FormatPAX}))
	f.Add(renamed(f, tar.TypeXHeader, "../../evil"))
	f.Add(renamed(f, tar.TypeGNULongName, "ok.txt"))
	f.Add([]byte("garbage"))
	// One store per fuzzing process, a fresh session per input: opening a
	// store per input made each exec cost tens of milliseconds.
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
	other := create(f, s)
	put(f, s, other, "o", "other")
	outBefore := treeHash(f, outside)
	otherBefore := treeHash(f, wsPath(s, other))

	f.Fuzz(func(t *testing.T, data []byte) {
		id := create(t, s)
		defer func() { require.NoError(t, s.Delete(owner, id)) }()
		put(t, s, id, "keep/file", "keep")
		if err := os.Symlink("../../../outside", filepath.Join(wsPath(s, id), "link")); err != nil {
			t.Fatal(err)
		}
		before := treeHash(t, wsPath(s, id))

		files, err := s.PutTar(owner, id, bytes.NewReader(data))
		if err != nil {
			if got := treeHash(t, wsPath(s, id)); got != before {
				t.Fatalf("refused tar (%v) changed the workspace", err)
			}
		} else {
			for _, fi := range files {
				rc, e, err := s.OpenFile(owner, id, fi.Path)
				if err != nil {
					t.Fatalf("reported %q is not readable: %v", fi.Path, err)
				}
				rc.Close()
				if e.SHA256 != fi.SHA256 || e.Size != fi.Size {
					t.Fatalf("reported %+v, stored %+v", fi, e)
				}
			}
		}
		if treeHash(t, outside) != outBefore {
			t.Fatal("something outside the store changed")
		}
		if treeHash(t, wsPath(s, other)) != otherBefore {
			t.Fatal("another session changed")
		}
		requireNoTemp(t, s, id)
		names, _ := os.ReadDir(filepath.Join(dir, "root"))
		if len(names) != 3 {
			t.Fatalf("the root holds %d entries, want meta, ws and snaps", len(names))
		}
	})
}
