package session

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCountsFollowChanges: a run's changes move the session's bytes and
// entries by exactly what they changed, however they reshape the tree.
// Runs are not followed by a walk, so a count that drifted here would be
// a quota that lets a session hold more, or less, than it should.
func TestCountsFollowChanges(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	steps := []struct {
		name  string
		layer []tarFile
	}{
		{"a tree", []tarFile{{name: "d/", typ: tar.TypeDir}, {name: "d/e/f", body: "12345"}, {name: "top", body: "abc"}, {name: "l", typ: tar.TypeSymlink, link: "top"}}},
		{"a file replaced, a link replaced by a file", []tarFile{{name: "top", body: "abcdefgh"}, {name: "l", body: "was a link"}}},
		{"a folder replaced by a file", []tarFile{{name: "d", body: "now a file"}}},
		{"a file replaced by a folder with files", []tarFile{{name: "d/", typ: tar.TypeDir}, wh("d/.wh..wh..opq"), {name: "d/x/y/z", body: strings.Repeat("z", 4096)}}},
		{"an opaque folder", []tarFile{{name: "d/", typ: tar.TypeDir}, wh("d/.wh..wh..opq"), {name: "d/only", body: "1"}}},
		{"whiteouts of a folder and a file", []tarFile{wh(".wh.d"), wh(".wh.top"), {name: "n/m/", typ: tar.TypeDir}}},
		{"a hard link copied, a copy-up unchanged", []tarFile{{name: "a", body: "same"}, {name: "b", typ: tar.TypeLink, link: "a"}, {name: "l", body: "was a link"}}},
	}
	for _, st := range steps {
		_, err := applyTo(t, s, id, layerOf(t, st.layer...))
		require.NoError(t, err, st.name)
		requireCounted(t, s, id)
	}
}

// TestLeaseFacts: a lease vouches for its workspace's bytes and owner
// (what a view of it needs) with the store's own count, unless Open found
// an entry the store would not have made: then a run measures.
func TestLeaseFacts(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	s, err := Open(root, Limits{})
	require.NoError(t, err)
	id := create(t, s)
	put(t, s, id, "a/b.txt", "hello")
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	require.NotNil(t, l.Facts)
	require.Equal(t, int64(5), l.Facts.Bytes)
	require.Equal(t, l.Used, l.Facts.Bytes)
	require.True(t, l.Facts.Uniform)
	require.Equal(t, os.Geteuid(), l.Facts.UID)
	l.Release()
	require.NoError(t, s.Close())

	// A folder with a set-id bit, as the store never makes one.
	dir := filepath.Join(wsPath(s, id), "a")
	require.NoError(t, os.Chmod(dir, 0o755|os.ModeSetgid))
	s, err = Open(root, Limits{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	l, err = s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	require.Nil(t, l.Facts, "the store vouched for a workspace holding an entry it did not make")
	require.Equal(t, int64(5), l.Used)
	l.Release()
}
