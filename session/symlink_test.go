package session

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// plantLinks makes, directly on disk as a run would, links that point out
// of the workspace and inside it.
func plantLinks(t *testing.T, s *Store, id string, sen sentinel) {
	t.Helper()
	put(t, s, id, "a/file", "inside")
	plantLinksIn(t, wsPath(s, id), sen)
}

// plantLinksIn makes the links of plantLinks in the folder ws, which holds
// a/file.
func plantLinksIn(t *testing.T, ws string, sen sentinel) {
	t.Helper()
	for name, target := range map[string]string{
		"leak":  sen.path,
		"d":     "/",
		"up":    "..",
		"rel":   "../../../../../../..",
		"out":   sen.dir,
		"inner": "a",
		"f":     "a/file",
		"a/esc": "../../..",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(ws, name)))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
}

func TestSymlinkAttacks(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	sen := newSentinel(t)
	plantLinks(t, s, id, sen)

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
			{"out/secret", ErrBadPath, "symlink"},
			{"up/meta/lock", ErrBadPath, "symlink"},
			{"rel/etc/passwd", ErrBadPath, "symlink"},
			{"inner/file", ErrBadPath, "symlink"},
			{"a/esc/x", ErrBadPath, "symlink"},
		} {
			rc, _, err := s.OpenFile(owner, id, tt.path)
			require.ErrorIs(t, err, tt.is, tt.path)
			require.ErrorContains(t, err, tt.msg, tt.path)
			require.True(t, rc == nil, "a nil interface on error")
		}
	})
	t.Run("write", func(t *testing.T) {
		for _, p := range []string{"d/tmp/x", "out/secret", "out/new", "up/x", "rel/tmp/x", "inner/new", "a/esc/x"} {
			_, err := s.PutFile(owner, id, p, strings.NewReader("pwned"))
			require.ErrorIs(t, err, ErrBadPath, p)
			require.ErrorContains(t, err, "symlink", p)
		}
		sen.check(t)
	})
	t.Run("list", func(t *testing.T) {
		list, err := s.ListFiles(owner, id, "")
		require.NoError(t, err)
		byPath := map[string]Entry{}
		for _, e := range list {
			byPath[e.Path] = e
			require.False(t, strings.HasPrefix(e.Path, "out/") || strings.HasPrefix(e.Path, "d/"), e.Path)
		}
		require.Equal(t, Entry{Path: "leak", Type: TypeSymlink, Target: sen.path, Size: int64(len(sen.path)), Modified: byPath["leak"].Modified}, byPath["leak"])
		require.Equal(t, TypeSymlink, byPath["d"].Type)
		require.NotContains(t, byPath, "fifo", "special files are not listed")
		one, err := s.ListFiles(owner, id, "out")
		require.NoError(t, err)
		require.Equal(t, []string{"out"}, paths(one))
		_, err = s.ListFiles(owner, id, "d/etc")
		require.ErrorIs(t, err, ErrBadPath)
	})
	t.Run("tar", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, s.WriteTar(owner, id, &buf))
		tr := tar.NewReader(&buf)
		seen := map[string]byte{}
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			seen[hdr.Name] = hdr.Typeflag
			b, _ := io.ReadAll(tr)
			require.NotContains(t, string(b), "top secret")
		}
		require.Equal(t, byte(tar.TypeSymlink), seen["leak"])
		require.Equal(t, byte(tar.TypeSymlink), seen["out"])
		require.Equal(t, byte(tar.TypeReg), seen["a/file"])
		require.NotContains(t, seen, "fifo")
		require.NotContains(t, seen, "out/secret")
	})
	t.Run("tar upload through links", func(t *testing.T) {
		for _, p := range []string{"out/secret", "d/tmp/x", "up/x", "inner/x"} {
			_, err := s.PutTar(owner, id, tarOf(t, tarFile{name: p, body: "pwned"}))
			require.ErrorIs(t, err, ErrBadPath, p)
		}
		_, err := s.PutTar(owner, id, tarOf(t, tarFile{name: "out", typ: tar.TypeDir}))
		require.ErrorIs(t, err, ErrBadPath)
		sen.check(t)
	})
	t.Run("delete", func(t *testing.T) {
		for _, p := range []string{"d/x", "out/secret", "up/x", "inner/file"} {
			require.ErrorIs(t, s.DeleteFile(owner, id, p), ErrBadPath, p)
		}
		for _, p := range []string{"out", "d", "leak", "up", "fifo"} {
			require.NoError(t, s.DeleteFile(owner, id, p), p)
			_, err := os.Lstat(filepath.Join(wsPath(s, id), p))
			require.ErrorIs(t, err, os.ErrNotExist)
		}
		require.NoError(t, s.DeleteFile(owner, id, "a")) // holds a link out: only the link goes
		sen.check(t)
	})
	t.Run("replace a link", func(t *testing.T) {
		require.NoError(t, os.Symlink(sen.path, filepath.Join(wsPath(s, id), "leak2")))
		put(t, s, id, "leak2", "mine")
		fi, err := os.Lstat(filepath.Join(wsPath(s, id), "leak2"))
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular(), "the link itself is replaced")
		sen.check(t)
	})
	sen.check(t)
	_, err := os.Stat(sen.path)
	require.NoError(t, err)
}

// TestSymlinkSwapRace swaps a file and a folder for links out of the
// workspace while reads and writes run: nothing outside is ever read or
// written, whatever the timing.
func TestSymlinkSwapRace(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	sen := newSentinel(t)
	ws := wsPath(s, id)
	put(t, s, id, "a/file", "inside")

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the run: flips a/file and b between the real thing and a link out
		defer wg.Done()
		for !stop.Load() {
			_ = os.Rename(filepath.Join(ws, "a/file"), filepath.Join(ws, "a/file.real"))
			_ = os.Symlink(sen.path, filepath.Join(ws, "a/file"))
			_ = os.Remove(filepath.Join(ws, "a/file"))
			_ = os.Rename(filepath.Join(ws, "a/file.real"), filepath.Join(ws, "a/file"))
			_ = os.RemoveAll(filepath.Join(ws, "b"))
			_ = os.Symlink(filepath.Join(sen.dir, "sub"), filepath.Join(ws, "b"))
			_ = os.Remove(filepath.Join(ws, "b"))
			_ = os.Mkdir(filepath.Join(ws, "b"), 0o755)
		}
	}()
	for range 150 {
		if rc, _, err := s.OpenFile(owner, id, "a/file"); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			require.NotContains(t, string(b), "secret")
		}
		_, _ = s.PutFile(owner, id, "b/x", strings.NewReader("pwned"))
		if list, err := s.ListFiles(owner, id, ""); err == nil {
			for _, e := range list {
				require.NotEqual(t, sum("top secret"), e.SHA256)
			}
		}
		var buf bytes.Buffer
		_ = s.WriteTar(owner, id, &buf)
		require.NotContains(t, buf.String(), "top secret")
		_ = s.DeleteFile(owner, id, "b/x")
	}
	stop.Store(true)
	wg.Wait()
	sen.check(t)
}
