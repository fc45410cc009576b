package images

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRemoveTreeDoesNotFollowSymlinksOut(t *testing.T) {
	outside := t.TempDir()
	keep := filepath.Join(outside, "precious")
	require.NoError(t, os.WriteFile(keep, []byte("host data"), 0o644))

	dir := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "rootfs/etc"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "rootfs/host")))
	require.NoError(t, os.Symlink(keep, filepath.Join(dir, "rootfs/etc/resolv.conf")))

	require.NoError(t, removeTree(dir))
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist)
	data, err := os.ReadFile(keep)
	require.NoError(t, err)
	require.Equal(t, "host data", string(data))

	require.NoError(t, removeTree(dir), "removing a missing tree is not an error")
}
