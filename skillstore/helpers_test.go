package skillstore

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/skill"
)

// ent is one archive member a test writes.
type ent struct {
	name string
	body string
	mode int64
	typ  byte // tar type flag; 0 is a regular file
	link string
}

const ownerA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const ownerB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

func skillMD(name, extra string) string {
	return "---\nname: " + name + "\ndescription: Greets people. Use it to say hello.\n" + extra + "---\n# " + name + "\n\nRun scripts/hello.py.\n"
}

// demo is a small valid skill named name, as members under prefix.
func demo(prefix, name, extra string) []ent {
	return []ent{
		{name: prefix + "SKILL.md", body: skillMD(name, extra)},
		{name: prefix + "scripts/", typ: tar.TypeDir, mode: 0o755},
		{name: prefix + "scripts/hello.py", body: "print('hello')\n", mode: 0o755},
	}
}

func tarOf(t testing.TB, ents []ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.link, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func zipOf(t testing.TB, ents []ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		mode := fs.FileMode(e.mode & 0o777)
		if mode == 0 {
			mode = 0o644
		}
		body := e.body
		switch e.typ {
		case tar.TypeDir:
			mode |= fs.ModeDir
		case tar.TypeSymlink:
			mode |= fs.ModeSymlink
			body = e.link
		case tar.TypeChar:
			mode |= fs.ModeDevice | fs.ModeCharDevice
		}
		if e.mode&0o4000 != 0 {
			mode |= fs.ModeSetuid
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func openStore(t testing.TB, lim Limits, opts ...Option) (*Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	s, err := Open(root, lim, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, root
}

// requireNothingKept fails when the store holds anything but its staging
// folder, its locks and its marker (and the owner folders in keep), and
// the staging folder anything but the open stores' empty folders.
func requireNothingKept(t testing.TB, root string, keep ...string) {
	t.Helper()
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, append([]string{stagingDir, locksDir, skill.UploadStoreMarker}, keep...), names)
	procs, err := os.ReadDir(filepath.Join(root, stagingDir))
	require.NoError(t, err)
	for _, p := range procs {
		require.True(t, strings.HasPrefix(p.Name(), procPrefix), "the staging folder keeps %s", p.Name())
		staged, err := os.ReadDir(filepath.Join(root, stagingDir, p.Name()))
		require.NoError(t, err)
		require.Len(t, staged, 1, "%s keeps %v", p.Name(), staged)
		require.Equal(t, procLock, staged[0].Name())
	}
}

func put(t testing.TB, s *Store, owner string, f Format, data []byte) (Upload, error) {
	t.Helper()
	return s.Put(owner, f, bytes.NewReader(data))
}

func contains(t testing.TB, err error, want string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), want), "error %q does not say %q", err, want)
}
