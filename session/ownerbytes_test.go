package session

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOwnerBytes: an owner's bytes are its sessions' files and what their
// snapshots alone hold; another owner's and a deleted session's are not.
func TestOwnerBytes(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	other := create(t, s)
	put(t, s, id, "a", string(make([]byte, 40)))
	put(t, s, other, "b", string(make([]byte, 7)))
	require.Equal(t, int64(47), s.OwnerBytes(owner))
	_, err := s.Snapshot(owner, id, "")
	require.NoError(t, err)
	_, err = applyTo(t, s, id, layerOf(t, tarFile{name: "a", body: string(make([]byte, 41))}))
	require.NoError(t, err)
	require.Equal(t, int64(41+40+7), s.OwnerBytes(owner), "the replaced file's bytes stay, the snapshot's alone")
	require.Equal(t, int64(0), s.OwnerBytes("someone-else"))
	require.NoError(t, s.Delete(owner, other))
	require.Equal(t, int64(81), s.OwnerBytes(owner))
}
