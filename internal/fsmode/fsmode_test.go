package fsmode

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Each kind of file a caller can make on disk is named by what it is.
func TestDescribeRealFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	link := filepath.Join(dir, "l")
	require.NoError(t, os.Symlink(file, link))
	fifo := filepath.Join(dir, "p")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })

	for path, want := range map[string]string{
		file: "a file", dir: "a folder", link: "a symlink", fifo: "a named pipe",
		sock: "a socket", "/dev/null": "a character device",
	} {
		fi, err := os.Lstat(path)
		require.NoError(t, err)
		require.Equal(t, want, Describe(fi.Mode()), path)
	}
}

// A mode with a type bit no case names still says it is not a plain file.
func TestDescribeOther(t *testing.T) {
	require.Equal(t, "a special file", Describe(fs.ModeIrregular))
	require.Equal(t, "a block device", Describe(fs.ModeDevice|0o600))
}
