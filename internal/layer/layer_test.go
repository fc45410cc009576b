package layer

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var when = time.Unix(1_700_000_000, 0)

// got is an entry as read, with a file's bytes, for comparisons.
type got struct {
	Kind           Kind
	Name, Linkname string
	Mode           fs.FileMode
	ModTime        int64
	Body           string
}

func read(t testing.TB, b []byte) []got {
	t.Helper()
	es, bodies, err := readAll(t, b)
	require.NoError(t, err)
	out := make([]got, len(es))
	for i, e := range es {
		out[i] = got{e.Kind, e.Name, e.Linkname, e.Mode, e.ModTime.Unix(), string(bodies[i])}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.Opaque(""))
	require.NoError(t, w.Whiteout("gone"))
	require.NoError(t, w.Whiteout("d/e/gone too"))
	require.NoError(t, w.Dir("d", 0o750|fs.ModeSetgid, when))
	require.NoError(t, w.Opaque("d"))
	require.NoError(t, w.File("d/run.sh", 0o755|fs.ModeSetuid, when, 5, strings.NewReader("hello, and more")))
	require.NoError(t, w.File("empty", 0o600, when, 0, strings.NewReader("")))
	require.NoError(t, w.Symlink("d/up", "../../../etc/shadow", when))
	require.NoError(t, w.Close())

	require.Equal(t, []got{
		{Kind: KindOpaque, Name: "", Mode: WhiteoutMode, ModTime: 0},
		{Kind: KindWhiteout, Name: "gone", Mode: WhiteoutMode, ModTime: 0},
		{Kind: KindWhiteout, Name: "d/e/gone too", Mode: WhiteoutMode, ModTime: 0},
		{Kind: KindDir, Name: "d", Mode: 0o750, ModTime: when.Unix()},
		{Kind: KindOpaque, Name: "d", Mode: WhiteoutMode, ModTime: 0},
		{Kind: KindFile, Name: "d/run.sh", Mode: 0o755, ModTime: when.Unix(), Body: "hello"},
		{Kind: KindFile, Name: "empty", Mode: 0o600, ModTime: when.Unix()},
		{Kind: KindSymlink, Name: "d/up", Linkname: "../../../etc/shadow", Mode: 0o777, ModTime: when.Unix()},
	}, read(t, buf.Bytes()), "set-id bits never go through a layer")
}

// Every writer marks a deletion the same way: the bytes of a whiteout
// depend on its name alone.
func TestWhiteoutsAreAlike(t *testing.T) {
	write := func() []byte {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		require.NoError(t, w.Whiteout("a/b"))
		require.NoError(t, w.Opaque("a"))
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	first := write()
	time.Sleep(1100 * time.Millisecond)
	require.Equal(t, first, write(), "a whiteout's bytes changed with the time it was written")
	require.Equal(t, []got{
		{Kind: KindWhiteout, Name: "a/b", Mode: WhiteoutMode, ModTime: 0},
		{Kind: KindOpaque, Name: "a", Mode: WhiteoutMode, ModTime: 0},
	}, read(t, first))
}

func TestWriterLeavesOutWhiteoutNames(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.File(".wh.keep", 0o644, when, 4, strings.NewReader("forg")))
	require.NoError(t, w.Dir(".wh.d", 0o755, when))
	require.NoError(t, w.File(".wh.d/x", 0o644, when, 1, strings.NewReader("x")))
	require.NoError(t, w.Symlink("d/.wh..wh..opq", "x", when))
	require.NoError(t, w.Whiteout(".wh.was"))
	require.NoError(t, w.Opaque("a/.wh.b"))
	require.NoError(t, w.File("kept", 0o644, when, 1, strings.NewReader("k")))
	require.NoError(t, w.Close())
	require.Equal(t, 6, w.LeftOut())
	require.Equal(t, []got{{Kind: KindFile, Name: "kept", Mode: 0o644, ModTime: when.Unix(), Body: "k"}}, read(t, buf.Bytes()))
}

func TestWriterRefuses(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *Writer) error
		is    error
	}{
		{"a name climbing out", func(w *Writer) error { return w.Dir("../x", 0o755, when) }, nil},
		{"an absolute name", func(w *Writer) error { return w.File("/etc/x", 0o644, when, 0, strings.NewReader("")) }, nil},
		{"a whiteout climbing out", func(w *Writer) error { return w.Whiteout("a/../../x") }, nil},
		{"an opaque folder climbing out", func(w *Writer) error { return w.Opaque("..") }, nil},
		{"a link without target", func(w *Writer) error { return w.Symlink("l", "", when) }, nil},
		{"a file that shrank", func(w *Writer) error { return w.File("f", 0o644, when, 10, strings.NewReader("short")) }, ErrShrank},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.write(NewWriter(io.Discard))
			require.Error(t, err)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
		})
	}
}

// FromRoot writes what a folder holds, never following a link, never
// opening a fifo; a name a layer cannot carry stays behind.
func TestFromRoot(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d/e"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d/e/f.txt"), []byte("body"), 0o640))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".wh.forged"), []byte("x"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	for _, p := range []string{"d/e/f.txt", "d/e", "d", "link"} {
		require.NoError(t, os.Chtimes(filepath.Join(dir, p), when, when))
	}
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()

	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, name := range []string{".wh.forged", "d", "d/e", "d/e/f.txt", "link", "pipe"} {
		mode, err := w.FromRoot(root, name)
		require.NoError(t, err, name)
		require.NotZero(t, mode, name)
	}
	require.NoError(t, w.Close())
	require.Equal(t, []got{
		{Kind: KindDir, Name: "d", Mode: 0o750, ModTime: when.Unix()},
		{Kind: KindDir, Name: "d/e", Mode: 0o750, ModTime: when.Unix()},
		{Kind: KindFile, Name: "d/e/f.txt", Mode: 0o640, ModTime: when.Unix(), Body: "body"},
		{Kind: KindSymlink, Name: "link", Linkname: "/etc/passwd", Mode: 0o777, ModTime: read(t, buf.Bytes())[3].ModTime},
	}, read(t, buf.Bytes()))
	require.Equal(t, 1, w.LeftOut())
}
