package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func tarOf(t *testing.T, hdrs ...*tar.Header) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		body := []byte(h.Linkname)
		if h.Typeflag == tar.TypeReg {
			h.Linkname, h.Size = "", int64(len(body))
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write(body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return bytes.NewReader(buf.Bytes())
}

// TestUntar keeps modes (set-id bits included) and links, and never writes
// outside the folder: not through "..", not through a symlink an earlier
// entry left.
func TestUntar(t *testing.T) {
	outside := t.TempDir()
	dir := filepath.Join(t.TempDir(), "rootfs")
	require.NoError(t, os.Mkdir(dir, 0o755))
	// A regular file's Linkname holds its content in tarOf.
	r := tarOf(t,
		&tar.Header{Typeflag: tar.TypeDir, Name: "usr/bin/", Mode: 0o755},
		&tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/su", Mode: 0o4755, Linkname: "elf"},
		&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777},
		&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin", Linkname: "usr/bin"},
		&tar.Header{Typeflag: tar.TypeLink, Name: "usr/bin/su2", Linkname: "usr/bin/su"},
		&tar.Header{Typeflag: tar.TypeReg, Name: "../escape", Mode: 0o644, Linkname: "x"},
		&tar.Header{Typeflag: tar.TypeSymlink, Name: "out", Linkname: outside},
		&tar.Header{Typeflag: tar.TypeReg, Name: "out/pwned", Mode: 0o644, Linkname: "x"},
		&tar.Header{Typeflag: tar.TypeChar, Name: "dev/mem", Mode: 0o600, Devmajor: 1, Devminor: 1},
	)
	err := untar(context.Background(), r, dir)
	require.Error(t, err, "an entry through a symlink out of the folder is refused")
	require.NoFileExists(t, filepath.Join(outside, "pwned"))
	require.NoFileExists(t, filepath.Join(filepath.Dir(dir), "escape"))

	fi, err := os.Stat(filepath.Join(dir, "usr/bin/su"))
	require.NoError(t, err)
	require.Equal(t, os.ModeSetuid|0o755, fi.Mode())
	link, err := os.Readlink(filepath.Join(dir, "bin"))
	require.NoError(t, err)
	require.Equal(t, "usr/bin", link)
	fi2, err := os.Stat(filepath.Join(dir, "usr/bin/su2"))
	require.NoError(t, err)
	require.True(t, os.SameFile(fi, fi2), "a hard link stays one")
}
