package skillstore

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzPut feeds arbitrary bytes as a tar and as a zip upload: nothing is
// ever written outside the store, a refusal keeps nothing, and a stored
// skill sums to its digest with every link resolving inside its folder.
func FuzzPut(f *testing.F) {
	f.Add(tarOf(f, demo("", "hello", "")), false)
	f.Add(tarOf(f, append(demo("top/", "hello", ""), ent{name: "top/l", typ: tar.TypeSymlink, link: "scripts/hello.py"})), false)
	f.Add(tarOf(f, append(demo("", "hello", ""), ent{name: "../x", body: "x"})), false)
	f.Add(zipOf(f, demo("", "hello", "")), true)
	f.Add(zipOf(f, append(demo("a/", "hello", ""), ent{name: "a/l", typ: tar.TypeSymlink, link: "../../x"})), true)
	f.Fuzz(func(t *testing.T, data []byte, isZip bool) {
		parent := t.TempDir()
		root := filepath.Join(parent, "store")
		s, err := Open(root, Limits{MaxUploadBytes: 1 << 20, MaxFiles: 64})
		require.NoError(t, err)
		format := FormatTar
		if isZip {
			format = FormatZip
		}
		up, err := s.Put(ownerA, format, bytes.NewReader(data))
		ents, rerr := os.ReadDir(parent)
		require.NoError(t, rerr)
		require.Len(t, ents, 1, "only the store is in its parent")
		if err != nil {
			requireNothingKept(t, root)
			return
		}
		r, err := s.Resolve(ownerA, up.Name+"@"+up.Digest)
		require.NoError(t, err)
		d, err := Digest(r.Dir)
		require.NoError(t, err)
		require.Equal(t, up.Digest, d)
		require.NoError(t, filepath.WalkDir(r.Dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.Type()&fs.ModeSymlink == 0 {
				return err
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return nil // dangling or a loop: reaches nothing
			}
			require.True(t, real == r.Dir || strings.HasPrefix(real, r.Dir+"/"), "%s resolves to %s, outside the skill", p, real)
			return nil
		}))
		requireNothingKept(t, root, ownerA)
	})
}
