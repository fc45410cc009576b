package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFactsOf: facts the workspace's owner vouched for are taken as they
// are (the folder is not read: here it does not even exist); without
// them the folder is measured.
func TestFactsOf(t *testing.T) {
	vouched := &WorkspaceFacts{Bytes: 1 << 30, UID: 1000, GID: 1000, Uniform: true}
	got, err := FactsOf(&Spec{Workspace: filepath.Join(t.TempDir(), "absent"), WorkspaceFacts: vouched})
	require.NoError(t, err)
	require.Equal(t, *vouched, got)
	require.Equal(t, int64(MinFree), got.Room(1<<30), "a workspace at its cap still gets MinFree")
	require.Equal(t, int64(1<<20), got.Room(1<<30+1<<20))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	got, err = FactsOf(&Spec{Workspace: dir})
	require.NoError(t, err)
	require.Equal(t, int64(PageSize), got.Bytes, "measured: what the file takes in a tmpfs")
	_, err = FactsOf(&Spec{Workspace: filepath.Join(dir, "absent")})
	require.ErrorIs(t, err, ErrWorkspace)
}
