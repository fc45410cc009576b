package cow

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestWriteLayer turns an overlay upper folder into an OCI layer: files,
// folders and links as entries, whiteout devices as .wh. entries, an
// opaque folder with .wh..wh..opq; a fifo stays behind (and is never
// opened), and so does a file the script named as a whiteout (a layer
// cannot carry it: it would delete another file). It needs root for the whiteout device and the trusted xattr.
func TestWriteLayer(t *testing.T) {
	require.Zero(t, os.Geteuid(), "run as root, as the backend does: whiteouts are device nodes")
	up := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(up, "out/deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(up, "out/deep/r.json"), []byte(`{}`), 0o640))
	require.NoError(t, os.Symlink("../etc/passwd", filepath.Join(up, "link")))
	require.NoError(t, unix.Mknod(filepath.Join(up, "gone.txt"), unix.S_IFCHR, 0))
	require.NoError(t, os.Mkdir(filepath.Join(up, "fresh"), 0o700))
	require.NoError(t, unix.Setxattr(filepath.Join(up, "fresh"), opaqueKey, []byte("y"), 0))
	require.NoError(t, unix.Mkfifo(filepath.Join(up, "pipe"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(up, ".wh.keep"), []byte("forged"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(up, "out/.wh..wh..opq"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(up, "out/.wh..wh..opq/x"), []byte("forged"), 0o644))

	var buf bytes.Buffer
	require.NoError(t, writeLayer(&buf, up))
	got := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NotContains(t, got, h.Name, "written twice")
		got[h.Name] = string(rune(h.Typeflag)) + ":" + h.Linkname + string(body)
	}
	require.Equal(t, map[string]string{
		"fresh/":             "5:",
		"fresh/.wh..wh..opq": "0:",
		".wh.gone.txt":       "0:",
		"link":               "2:../etc/passwd",
		"out/":               "5:",
		"out/deep/":          "5:",
		"out/deep/r.json":    "0:{}",
	}, got)
}
