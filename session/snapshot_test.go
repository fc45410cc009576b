package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

func TestSnapshotRestore(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	put(t, s, id, "keep", "keep")
	put(t, s, id, "edit", "v1")
	put(t, s, id, "gone", "gone")
	require.NoError(t, os.Chmod(filepath.Join(wsPath(s, id), "keep"), 0o755))
	before := treeHash(t, wsPath(s, id))

	snap, err := s.Snapshot(owner, id, "before the risky step")
	require.NoError(t, err)
	require.Equal(t, Snapshot{ID: snap.ID, Session: id, Label: "before the risky step", CreatedAt: snap.CreatedAt, Bytes: 10, Files: 3}, snap)

	put(t, s, id, "edit", "v2 longer")
	require.NoError(t, s.DeleteFile(owner, id, "gone"))
	put(t, s, id, "added/new", "new")
	_, err = applyTo(t, s, id, layerOf(t, tarFile{name: "keep", body: "by a run"}))
	require.NoError(t, err)

	info, err := s.Restore(owner, id, snap.ID)
	require.NoError(t, err)
	require.Equal(t, before, treeHash(t, wsPath(s, id)), "the workspace is exactly the snapshot, modes included")
	require.Equal(t, int64(10), info.BytesUsed)
	requireNoTemp(t, s, id)

	// Again: the snapshot itself did not change.
	put(t, s, id, "edit", "v3")
	_, err = s.Restore(owner, id, snap.ID)
	require.NoError(t, err)
	require.Equal(t, before, treeHash(t, wsPath(s, id)))
}

func TestSnapshotsSurviveReopenAndGoWithTheirSession(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	s, err := Open(root, Limits{MaxSnapshots: 2}, withoutSync())
	require.NoError(t, err)
	id := create(t, s)
	put(t, s, id, "a", "a")
	s1, err := s.Snapshot(owner, id, "")
	require.NoError(t, err)
	_, err = s.Snapshot(owner, id, "")
	require.NoError(t, err)
	_, err = s.Snapshot(owner, id, "")
	require.ErrorIs(t, err, ErrLimit, "sessions.max_snapshots")
	// An interrupted snapshot: its staging folder.
	require.NoError(t, os.Mkdir(filepath.Join(root, "snaps", id, fsroot.TempPrefix+"x"), 0o700))
	require.NoError(t, s.Close())

	s, err = Open(root, Limits{MaxSnapshots: 2}, withoutSync())
	require.NoError(t, err)
	defer s.Close()
	list, err := s.ListSnapshots(owner, id)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, s1.ID, list[0].ID)
	require.NoDirExists(t, filepath.Join(root, "snaps", id, fsroot.TempPrefix+"x"))
	_, err = s.ListSnapshots("someone-else", id)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.DeleteSnapshot(owner, id, "nosuchsnapshotnosuchsnapsh"), ErrSnapshotNotFound)

	require.NoError(t, s.DeleteSnapshot(owner, id, s1.ID))
	list, err = s.ListSnapshots(owner, id)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NoError(t, s.Delete(owner, id))
	require.NoDirExists(t, filepath.Join(root, "snaps", id), "a session's snapshots go with it")
}

func TestForkIsIndependentBothWays(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	put(t, s, id, "shared", "v1")
	put(t, s, id, "d/f", "f")
	snap, err := s.Snapshot(owner, id, "")
	require.NoError(t, err)
	put(t, s, id, "later", "later")

	fork, err := s.Fork(owner, id, "", 0)
	require.NoError(t, err)
	require.Equal(t, int64(8), fork.BytesUsed)
	fromSnap, err := s.Fork(owner, id, snap.ID, 0)
	require.NoError(t, err)
	require.Equal(t, "v1", readAll(t, s, fromSnap.ID, "shared"))
	_, _, err = s.OpenFile(owner, fromSnap.ID, "later")
	require.ErrorIs(t, err, ErrFileNotFound, "a fork of a snapshot has the snapshot's files")

	put(t, s, fork.ID, "shared", "fork's")
	_, err = applyTo(t, s, id, layerOf(t, tarFile{name: "d/f", body: "source's"}))
	require.NoError(t, err)
	require.Equal(t, "v1", readAll(t, s, id, "shared"))
	require.Equal(t, "f", readAll(t, s, fork.ID, "d/f"))
	require.Equal(t, "fork's", readAll(t, s, fork.ID, "shared"))
	require.Equal(t, "f", readAll(t, s, fromSnap.ID, "d/f"))

	_, err = s.Fork("someone-else", id, "", 0)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Fork(owner, id, "nosuchsnapshotnosuchsnapsh", 0)
	require.ErrorIs(t, err, ErrSnapshotNotFound)
}

func TestSnapshotBytesCountInTheTotal(t *testing.T) {
	s := openStore(t, Limits{MaxTotalBytes: 100}, withoutSync())
	id := create(t, s)
	put(t, s, id, "a", string(make([]byte, 40)))
	_, err := s.Snapshot(owner, id, "")
	require.NoError(t, err)
	// Replacing the file leaves the old bytes to the snapshot alone.
	_, err = applyTo(t, s, id, layerOf(t, tarFile{name: "a", body: string(make([]byte, 41))}))
	require.NoError(t, err)
	s.mu.Lock()
	total := s.total
	s.mu.Unlock()
	require.Equal(t, int64(81), total)
	_, err = s.PutFile(owner, id, "b", strings.NewReader(string(make([]byte, 30))))
	require.ErrorIs(t, err, ErrLimit, "the snapshot's own bytes count against sessions.max_total_bytes")
}

// TestSnapshotTakesTurnsWithRuns: a snapshot waits for a run in the
// session to end, so it never holds half of a run's changes.
func TestSnapshotTakesTurnsWithRuns(t *testing.T) {
	s := openStore(t, Limits{}, withoutSync())
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	done := make(chan Snapshot)
	go func() {
		snap, err := s.Snapshot(owner, id, "")
		assert.NoError(t, err)
		done <- snap
	}()
	_, err = l.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tarFile{name: "a", body: "1"}, tarFile{name: "b", body: "2"})))
	require.NoError(t, err)
	select {
	case <-done:
		t.Fatal("the snapshot did not wait for the run")
	case <-time.After(50 * time.Millisecond):
	}
	l.Release()
	snap := <-done
	require.Equal(t, 2, snap.Files, "the snapshot holds all of the run's changes")
	require.FileExists(t, filepath.Join(s.Root(), "snaps", id, snap.ID, "b"))

}
