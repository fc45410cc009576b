package session

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// openFolder opens dir as a Folder and closes it at cleanup.
func openFolder(t testing.TB, dir string, lim Limits, writable bool) *Folder {
	t.Helper()
	f, err := OpenFolder(dir, lim, writable)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func readFolder(t testing.TB, f *Folder, p string) string {
	t.Helper()
	rc, _, err := f.OpenFile(p)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

// noTemp asserts no upload temp file was left in dir.
func noTemp(t testing.TB, dir string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, de := range des {
		require.False(t, fsroot.IsTemp(de.Name()), "temp file left: %s", de.Name())
	}
}

func TestFolderRoundTrip(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# project"), 0o600))
	f := openFolder(t, dir, Limits{}, true)
	require.Equal(t, dir, f.Dir())
	require.True(t, f.Writable())

	bin := string([]byte{0, 1, 0xff, 0xfe, '\n'})
	fi, err := f.PutFile("in/data.bin", strings.NewReader(bin))
	require.NoError(t, err)
	require.Equal(t, FileInfo{Path: "in/data.bin", Size: 5, SHA256: sum(bin)}, fi)
	got, err := os.ReadFile(filepath.Join(dir, "in", "data.bin"))
	require.NoError(t, err)
	require.Equal(t, bin, string(got), "the bytes are in the host folder")
	st, err := os.Stat(filepath.Join(dir, "in", "data.bin"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(fsroot.FilePerm), st.Mode().Perm(), "readable by the sandbox user")

	require.Equal(t, bin, readFolder(t, f, "in/data.bin"))
	require.Equal(t, "# project", readFolder(t, f, "README.md"), "the operator's own files are readable")
	_, e, err := f.OpenFile("README.md")
	require.NoError(t, err)
	require.Equal(t, int64(9), e.Size)
	require.Empty(t, e.SHA256, "a folder's files are not hashed on open")

	_, err = f.PutFile("README.md", strings.NewReader("replaced"))
	require.NoError(t, err)
	require.Equal(t, "replaced", readFolder(t, f, "README.md"))

	list, err := f.ListFiles("")
	require.NoError(t, err)
	require.Equal(t, []string{"README.md", "in", "in/data.bin"}, paths(list))
	require.Equal(t, TypeDir, list[1].Type)
	require.Equal(t, TypeFile, list[2].Type)
	require.Equal(t, int64(5), list[2].Size)
	require.Empty(t, list[2].SHA256, "a folder's listing reads no file")
	one, err := f.ListFiles("in")
	require.NoError(t, err)
	require.Equal(t, []string{"in/data.bin"}, paths(one))
	noTemp(t, dir)
}

func TestFolderReadOnly(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("original"), 0o644))
	before := treeHash(t, dir)
	f := openFolder(t, dir, Limits{}, false)
	require.False(t, f.Writable())
	for _, p := range []string{"keep.txt", "new.txt", "deep/new/file", "../escape", ""} {
		_, err := f.PutFile(p, strings.NewReader("changed"))
		require.ErrorIs(t, err, ErrReadOnly, p)
		require.ErrorContains(t, err, "workspace.write", "the error names the policy setting")
	}
	require.Equal(t, before, treeHash(t, dir), "a read-only folder is not touched")
	require.Equal(t, "original", readFolder(t, f, "keep.txt"), "reading still works")
	list, err := f.ListFiles("")
	require.NoError(t, err)
	require.Equal(t, []string{"keep.txt"}, paths(list))
}

func TestFolderSymlinkAttacks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "file"), []byte("inside"), 0o644))
	sen := newSentinel(t)
	plantLinksIn(t, dir, sen)
	f := openFolder(t, dir, Limits{}, true)

	t.Run("read", func(t *testing.T) {
		for _, tt := range []struct {
			path string
			is   error
			msg  string
		}{
			{"leak", ErrNotFile, sen.path},
			{"f", ErrNotFile, "symlink"},
			{"fifo", ErrNotFile, "named pipe"},
			{"d/etc/passwd", ErrBadPath, "symlink"},
			{"d/etc/hostname", ErrBadPath, "symlink"},
			{"out/secret", ErrBadPath, "symlink"},
			{"rel/etc/passwd", ErrBadPath, "symlink"},
			{"inner/file", ErrBadPath, "symlink"},
			{"a/esc/x", ErrBadPath, "symlink"},
		} {
			rc, _, err := f.OpenFile(tt.path)
			require.ErrorIs(t, err, tt.is, tt.path)
			require.ErrorContains(t, err, tt.msg, tt.path)
			require.True(t, rc == nil, "a nil interface on error")
		}
	})
	t.Run("write", func(t *testing.T) {
		for _, p := range []string{"d/tmp/x", "out/secret", "out/new", "up/x", "rel/tmp/x", "inner/new", "a/esc/x"} {
			_, err := f.PutFile(p, strings.NewReader("pwned"))
			require.ErrorIs(t, err, ErrBadPath, p)
			require.ErrorContains(t, err, "symlink", p)
		}
		sen.check(t)
		noTemp(t, dir)
	})
	t.Run("list", func(t *testing.T) {
		list, err := f.ListFiles("")
		require.NoError(t, err)
		byPath := map[string]Entry{}
		for _, e := range list {
			byPath[e.Path] = e
			for _, link := range []string{"d/", "out/", "up/", "rel/", "inner/", "a/esc/"} {
				require.False(t, strings.HasPrefix(e.Path, link), "listed through a link: %s", e.Path)
			}
		}
		require.Equal(t, Entry{Path: "d", Type: TypeSymlink, Target: "/", Size: 1, Modified: byPath["d"].Modified}, byPath["d"])
		require.Equal(t, TypeSymlink, byPath["leak"].Type)
		require.Equal(t, sen.path, byPath["leak"].Target)
		require.NotContains(t, byPath, "fifo", "special files are not listed")
		one, err := f.ListFiles("d")
		require.NoError(t, err)
		require.Equal(t, []Entry{byPath["d"]}, one, "listing a link shows the link")
		for _, p := range []string{"d/etc", "out/sub", "a/esc/x"} {
			_, err = f.ListFiles(p)
			require.ErrorIs(t, err, ErrBadPath, p)
		}
	})
	t.Run("replace a link", func(t *testing.T) {
		_, err := f.PutFile("leak", strings.NewReader("mine"))
		require.NoError(t, err)
		fi, err := os.Lstat(filepath.Join(dir, "leak"))
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular(), "the link itself is replaced")
	})
	sen.check(t)
}

func TestFolderBadPaths(t *testing.T) {
	f := openFolder(t, t.TempDir(), Limits{}, true)
	for _, p := range []string{"../x", "/etc/passwd", "a\\b", "%2e%2e/x", "a//b", "./a", "a/../../b", "x\x00y", fsroot.TempPrefix + "1"} {
		_, err := f.PutFile(p, strings.NewReader("x"))
		require.ErrorIs(t, err, ErrBadPath, p)
		_, _, err = f.OpenFile(p)
		require.ErrorIs(t, err, ErrBadPath, p)
		_, err = f.ListFiles(p)
		require.ErrorIs(t, err, ErrBadPath, p)
	}
	list, err := f.ListFiles("")
	require.NoError(t, err)
	require.Empty(t, list)
}

func TestFolderLimits(t *testing.T) {
	dir := t.TempDir()
	f := openFolder(t, dir, Limits{MaxFiles: 3, MaxDepth: 2}, true)
	_, err := f.PutFile("a/b/c", strings.NewReader("x"))
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitMaxDepth, le.Limit)

	// Deeper than MaxDepth on disk (the operator's own files): not listed.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "x", "y", "z"), 0o755))
	list, err := f.ListFiles("")
	require.NoError(t, err)
	require.Equal(t, []string{"x", "x/y"}, paths(list))

	for _, p := range []string{"1", "2", "3"} {
		_, err := f.PutFile(p, strings.NewReader(p))
		require.NoError(t, err, "no entry count on uploads: a folder has no quota")
	}
	_, err = f.ListFiles("")
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitMaxFiles, le.Limit)
	require.Contains(t, le.Hint, "list a sub folder")
}

// failingReader gives some bytes, then an error: an upload cut short.
type failingReader struct{ sent bool }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.sent {
		return 0, errors.New("connection reset")
	}
	r.sent = true
	return copy(p, "partial"), nil
}

func TestFolderFailedUploadLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old"), 0o644))
	before := treeHash(t, dir)
	f := openFolder(t, dir, Limits{}, true)
	for _, p := range []string{"new/deep/x.txt", "old.txt"} {
		_, err := f.PutFile(p, &failingReader{})
		require.ErrorContains(t, err, "connection reset", p)
	}
	require.Equal(t, before, treeHash(t, dir), "no half file, no folder made, no temp file")
}

func TestFolderHidesTempFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, fsroot.TempPrefix+"abc"), []byte("half"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real"), []byte("x"), 0o644))
	f := openFolder(t, dir, Limits{}, true)
	list, err := f.ListFiles("")
	require.NoError(t, err)
	require.Equal(t, []string{"real"}, paths(list))
	_, _, err = f.OpenFile(fsroot.TempPrefix + "abc")
	require.ErrorIs(t, err, ErrBadPath)
	require.FileExists(t, filepath.Join(dir, fsroot.TempPrefix+"abc"), "the operator's folder: not cleaned")
}

func TestOpenFolderErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for name, tt := range map[string]struct{ dir, msg string }{
		"empty":   {"", "no folder given"},
		"missing": {filepath.Join(dir, "nope"), "pass an existing folder"},
		"file":    {file, "not a folder"},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := OpenFolder(tt.dir, Limits{}, true)
			require.ErrorContains(t, err, tt.msg)
			require.Nil(t, f)
		})
	}
	f := openFolder(t, dir, Limits{}, true)
	require.NoError(t, f.Close())
	_, err := f.ListFiles("")
	require.Error(t, err, "closed")
}

// TestFolderSymlinkSwapRace swaps a file and a folder for links out of the
// folder while reads, writes and listings run: nothing outside is ever
// read or written, whatever the timing.
func TestFolderSymlinkSwapRace(t *testing.T) {
	dir := t.TempDir()
	sen := newSentinel(t)
	f := openFolder(t, dir, Limits{}, true)
	_, err := f.PutFile("a/file", strings.NewReader("inside"))
	require.NoError(t, err)

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // another process: flips a/file and b between the real thing and a link out
		defer wg.Done()
		for !stop.Load() {
			_ = os.Rename(filepath.Join(dir, "a/file"), filepath.Join(dir, "a/file.real"))
			_ = os.Symlink(sen.path, filepath.Join(dir, "a/file"))
			_ = os.Remove(filepath.Join(dir, "a/file"))
			_ = os.Rename(filepath.Join(dir, "a/file.real"), filepath.Join(dir, "a/file"))
			_ = os.RemoveAll(filepath.Join(dir, "b"))
			_ = os.Symlink(filepath.Join(sen.dir, "sub"), filepath.Join(dir, "b"))
			_ = os.Remove(filepath.Join(dir, "b"))
			_ = os.Mkdir(filepath.Join(dir, "b"), 0o755)
		}
	}()
	for range 150 {
		if rc, _, err := f.OpenFile("a/file"); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			require.NotContains(t, string(b), "secret")
		}
		_, _ = f.PutFile("b/x", strings.NewReader("pwned"))
		_, _ = f.ListFiles("")
	}
	stop.Store(true)
	wg.Wait()
	sen.check(t)
}
