package userdir

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrivate(t *testing.T) {
	t.Run("XDG_RUNTIME_DIR", func(t *testing.T) {
		xdg := t.TempDir()
		t.Setenv("XDG_RUNTIME_DIR", xdg)
		got, err := Private("hosts")
		require.NoError(t, err)
		require.Equal(t, filepath.Join(xdg, "sandboxrun-hosts"), got)
		fi, err := os.Stat(got)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	})
	t.Run("temp directory", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("XDG_RUNTIME_DIR", "")
		t.Setenv("TMPDIR", tmp)
		got, err := Private("locks")
		require.NoError(t, err)
		require.Equal(t, filepath.Join(tmp, "sandboxrun-locks-"+strconv.Itoa(os.Getuid())), got)
	})
	t.Run("refuses what others could change", func(t *testing.T) {
		xdg := t.TempDir()
		t.Setenv("XDG_RUNTIME_DIR", xdg)
		dir := filepath.Join(xdg, "sandboxrun-hosts")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o777))
		_, err := Private("hosts")
		require.ErrorContains(t, err, "closed to others")

		require.NoError(t, os.Remove(dir))
		require.NoError(t, os.Symlink(t.TempDir(), dir))
		_, err = Private("hosts")
		require.ErrorContains(t, err, "not a folder owned by", "a planted symlink is not our folder")
	})
}
