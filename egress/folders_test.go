package egress

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFoldersNameTheirOwner(t *testing.T) {
	dir := t.TempDir()
	owner := map[string]string{"io.sandboxrun.owner-pid": "42", "io.sandboxrun.owner-host": "h"}
	p, err := Start(testConfig(t), WithDir(dir), withHostAddrs(), WithOwner(owner))
	require.NoError(t, err)
	plain, err := Start(testConfig(t), WithDir(dir), withHostAddrs())
	require.NoError(t, err)
	// Not a proxy folder, and a file with the prefix: neither is listed.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "other"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, folderPrefix+"file"), nil, 0o600))

	got, err := Folders(dir)
	require.NoError(t, err)
	require.ElementsMatch(t, []Folder{
		{Path: filepath.Dir(p.Socket()), Owner: owner},
		{Path: filepath.Dir(plain.Socket())},
	}, got)

	require.NoError(t, p.Close())
	require.NoError(t, plain.Close())
	got, err = Folders(dir)
	require.NoError(t, err)
	require.Empty(t, got, "a closed proxy leaves no folder")
}
