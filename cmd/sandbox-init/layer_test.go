package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tarOf builds a tar stream of dirs (names ending in /), files and links
// ("name -> target").
func tarOf(t testing.TB, entries map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		body := entries[n]
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: time.Unix(1_600_000_000, 0)}
		switch {
		case n[len(n)-1] == '/':
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case len(body) > 3 && body[:3] == "-> ":
			h.Typeflag, h.Linkname = tar.TypeSymlink, body[3:]
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(body))
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// layerEntries reads a layer into name → what it says: "dir", "link:T",
// or the file's content.
func layerEntries(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		switch h.Typeflag {
		case tar.TypeDir:
			out[h.Name] = "dir"
		case tar.TypeSymlink:
			out[h.Name] = "link:" + h.Linkname
		default:
			body, err := io.ReadAll(tr)
			require.NoError(t, err)
			out[h.Name] = string(body)
		}
	}
}

func TestExtractAndLayer(t *testing.T) {
	dir := t.TempDir()
	in := tarOf(t, map[string]string{
		"keep.txt": "same", "edit.txt": "old", "gone.txt": "bye", "chmod.txt": "x",
		"sub/": "", "sub/a.txt": "a", "sub/deep/": "", "sub/deep/b.txt": "b",
		"old/": "", "old/c.txt": "c",
		"link": "-> keep.txt", "swap": "file becomes a folder",
	})
	require.NoError(t, extract(bytes.NewReader(in), dir))
	got, err := os.ReadFile(filepath.Join(dir, "sub/deep/b.txt"))
	require.NoError(t, err)
	require.Equal(t, "b", string(got))
	target, err := os.Readlink(filepath.Join(dir, "link"))
	require.NoError(t, err)
	require.Equal(t, "keep.txt", target)
	fi, err := os.Stat(filepath.Join(dir, "keep.txt"))
	require.NoError(t, err)
	require.Equal(t, time.Unix(1_600_000_000, 0), fi.ModTime(), "times come from the tar")

	before, err := snapshotTree(dir)
	require.NoError(t, err)

	// What a script does.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "edit.txt"), []byte("new"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.txt")))
	require.NoError(t, os.Chmod(filepath.Join(dir, "chmod.txt"), 0o600))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "old")))
	require.NoError(t, os.Remove(filepath.Join(dir, "sub/deep/b.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub/new.txt"), []byte("n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "made"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "made/m.txt"), []byte("m"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "swap")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "swap"), 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "abs")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".wh.keep.txt"), []byte("a forged whiteout"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub/.wh..wh..opq"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub/.wh..wh..opq/x"), []byte("under a forged marker"), 0o644))
	// Same size, same modification time: only the change time tells.
	p := filepath.Join(dir, "keep.txt")
	require.NoError(t, os.WriteFile(p, []byte("SAME"), 0o644))
	require.NoError(t, os.Chtimes(p, time.Unix(1_600_000_000, 0), time.Unix(1_600_000_000, 0)))

	var layer bytes.Buffer
	require.NoError(t, writeLayer(&layer, dir, before))
	require.Equal(t, map[string]string{
		".wh.gone.txt":       "",
		".wh.old":            "",
		"sub/deep/.wh.b.txt": "",
		"edit.txt":           "new",
		"chmod.txt":          "x",
		"keep.txt":           "SAME",
		"sub/new.txt":        "n",
		"made/":              "dir",
		"made/m.txt":         "m",
		"swap/":              "dir",
		"abs":                "link:/etc/passwd",
	}, layerEntries(t, layer.Bytes()), "a forged whiteout is not handed back; untouched entries are not either")
}

func TestExtractRefusesNamesThatLeave(t *testing.T) {
	for _, name := range []string{"../x", "/abs", "a/../../x"} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}))
			require.NoError(t, tw.Close())
			dir := t.TempDir()
			require.Error(t, extract(&buf, filepath.Join(dir)))
		})
	}
	// A symlink in the tree does not lead a later file out of it.
	dir := t.TempDir()
	outside := t.TempDir()
	in := tarOf(t, map[string]string{"l": "-> " + outside, "l/x": "escaped"})
	require.Error(t, extract(bytes.NewReader(in), dir))
	_, err := os.Stat(filepath.Join(outside, "x"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// FuzzExtract: whatever tar stream arrives, extract writes nothing outside
// its folder, and what it leaves inside diffs against itself to nothing.
func FuzzExtract(f *testing.F) {
	f.Add(tarOf(f, map[string]string{"a/": "", "a/b": "x", "l": "-> a"}))
	f.Add(tarOf(f, map[string]string{"l": "-> ..", "l/x": "out"}))
	f.Add(tarOf(f, map[string]string{"../x": "out"}))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "ws")
		require.NoError(t, os.Mkdir(dir, 0o755))
		_ = extract(bytes.NewReader(b), dir)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Len(t, entries, 1, "nothing is written beside the folder")
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755) // so that TempDir's cleanup can remove it
			}
			return nil
		})
		before, err := snapshotTree(dir)
		if err != nil {
			return
		}
		var layer bytes.Buffer
		require.NoError(t, writeLayer(&layer, dir, before))
		require.Empty(t, layerEntries(t, layer.Bytes()), "an untouched tree has no changes")
	})
}
