package layer

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rawLayer is a tar of empty entries named as given, each a file unless
// its name ends in "/"; no check of the names on the way.
func rawLayer(t testing.TB, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644}
		if strings.HasSuffix(n, "/") {
			h.Typeflag = tar.TypeDir
		}
		require.NoError(t, tw.WriteHeader(h))
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// readAll reads every entry of a layer, with the bytes of files.
func readAll(t testing.TB, b []byte) ([]Entry, [][]byte, error) {
	t.Helper()
	r := NewReader(bytes.NewReader(b))
	var es []Entry
	var bodies [][]byte
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return es, bodies, nil
		}
		if err != nil {
			return es, bodies, err
		}
		body, err := io.ReadAll(r)
		require.NoError(t, err)
		es, bodies = append(es, *e), append(bodies, body)
	}
}

func TestReaderNames(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes)
	deep := strings.Repeat(long+"/", 15) + strings.Repeat("y", MaxNameBytes-1) + "/z" // MaxPathBytes exactly
	tests := []struct {
		name string
		kind Kind
		want string // the entry's Name; "" with kind 0: refused
	}{
		{"a/b.txt", KindFile, "a/b.txt"},
		{"./a/b.txt", KindFile, "a/b.txt"},
		{"d/", KindDir, "d"},
		{"back\\slash", KindFile, "back\\slash"},
		{"new\nline", KindFile, "new\nline"},
		{"%2e%2e", KindFile, "%2e%2e"},
		{"...", KindFile, "..."},
		{".wh.gone", KindWhiteout, "gone"},
		{"a/b/.wh.gone", KindWhiteout, "a/b/gone"},
		{".wh..wh..opq", KindOpaque, ""},
		{"./.wh..wh..opq", KindOpaque, ""},
		{"a/.wh..wh..opq", KindOpaque, "a"},
		{"a/b/.wh..wh..opq", KindOpaque, "a/b"},
		{deep, KindFile, deep},
		{long, KindFile, long},
		{"..", 0, ""},
		{"../x", 0, ""},
		{"a/../..", 0, ""},
		{"a/../b", 0, ""},
		{"a/./b", 0, ""},
		{"a//b", 0, ""},
		{"/abs", 0, ""},
		{"/etc/passwd", 0, ""},
		{"a/.wh.", 0, ""},
		{".wh.", 0, ""},
		{".wh..", 0, ""},
		{".wh...", 0, ""},
		{"a/b/.wh...", 0, ""}, // not a whiteout of "a"
		{"../.wh.x", 0, ""},
		{"../.wh..wh..opq", 0, ""},
		{"/.wh..wh..opq", 0, ""},
		{"/.wh.x", 0, ""},
		{"//.wh.x", 0, ""},
		{"a//.wh.x", 0, ""},
		{"a/../.wh..wh..opq", 0, ""},
		{".wh.d/x", 0, ""},
		{"a/.wh.d/.wh..wh..opq", 0, ""},
		{".wh..wh.x", 0, ""}, // the deleted name would be a whiteout's
		{long + "x", 0, ""},
		{deep + "y", 0, ""},
		{"a/" + long + "x/b", 0, ""},
	}
	require.Len(t, deep, MaxPathBytes)
	for _, tt := range tests {
		t.Run(shorten(tt.name), func(t *testing.T) {
			es, _, err := readAll(t, rawLayer(t, tt.name))
			if tt.kind == 0 {
				require.ErrorIs(t, err, ErrMalformed)
				var le *Error
				require.ErrorAs(t, err, &le)
				require.Equal(t, 1, le.Entry)
				return
			}
			require.NoError(t, err)
			require.Len(t, es, 1)
			require.Equal(t, tt.kind, es[0].Kind)
			require.Equal(t, tt.want, es[0].Name)
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", "a\x00b", "\x00", "a/\x00/b", "/", "a/", ".", "..", "x/.wh.y/z"} {
		require.Error(t, CheckName(bad), "%q", bad)
		require.False(t, Carries(bad), "%q", bad)
	}
	for _, good := range []string{"a", "a/b", "a.wh.b", "a/b.wh..wh..opq", " "} {
		require.NoError(t, CheckName(good), "%q", good)
	}
	require.Error(t, checkTarget("a\x00b"))
	require.Error(t, checkTarget(""))
	require.Error(t, checkTarget(strings.Repeat("x", MaxPathBytes+1)))
	require.NoError(t, checkTarget("../../../etc/shadow"), "where a link points is no concern of a layer")
}

func TestReaderRoot(t *testing.T) {
	es, _, err := readAll(t, rawLayer(t, "./", "/", "a"))
	require.NoError(t, err)
	require.Len(t, es, 1, "the root's own folder entries are passed over")
	require.Equal(t, 3, es[0].Index)

	_, _, err = readAll(t, rawLayer(t, "."))
	require.ErrorIs(t, err, ErrMalformed, "a file cannot be the root")
}

func TestReaderTypes(t *testing.T) {
	tests := []struct {
		name string
		h    tar.Header
		ok   bool
	}{
		{"symlink anywhere", tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/shadow"}, true},
		{"symlink without target", tar.Header{Typeflag: tar.TypeSymlink, Name: "l"}, false},
		{"symlink target too long", tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: strings.Repeat("x", MaxPathBytes+1)}, false},
		{"hard link inside", tar.Header{Typeflag: tar.TypeLink, Name: "l", Linkname: "./a/b"}, true},
		{"hard link out", tar.Header{Typeflag: tar.TypeLink, Name: "l", Linkname: "/etc/passwd"}, false},
		{"hard link up", tar.Header{Typeflag: tar.TypeLink, Name: "l", Linkname: "../x"}, false},
		{"char device", tar.Header{Typeflag: tar.TypeChar, Name: "c"}, false},
		{"block device", tar.Header{Typeflag: tar.TypeBlock, Name: "b"}, false},
		{"fifo", tar.Header{Typeflag: tar.TypeFifo, Name: "f"}, false},
		{"a device named as a whiteout is a whiteout", tar.Header{Typeflag: tar.TypeChar, Name: ".wh.c"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			require.NoError(t, tw.WriteHeader(&tt.h))
			require.NoError(t, tw.Close())
			_, _, err := readAll(t, buf.Bytes())
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrMalformed)
			}
		})
	}
	_, _, err := readAll(t, []byte("not a tar at all, and long enough to be read as a header block"))
	require.ErrorIs(t, err, ErrMalformed)
}
