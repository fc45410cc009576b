package session

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

func TestPutOpenListDelete(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	fi, err := s.PutFile(owner, id, "in/bytes.bin", bytes.NewReader(all))
	require.NoError(t, err)
	require.Equal(t, FileInfo{Path: "in/bytes.bin", Size: 256, SHA256: sum(string(all))}, fi)
	put(t, s, id, "a.txt", "old content")
	put(t, s, id, "a.txt", "new") // replaces

	rc, e, err := s.OpenFile(owner, id, "in/bytes.bin")
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, all, got)
	require.Equal(t, sum(string(all)), e.SHA256)
	require.Equal(t, TypeFile, e.Type)
	require.Equal(t, "new", readAll(t, s, id, "a.txt"))

	for p, want := range map[string]os.FileMode{"in": 0o755, "in/bytes.bin": 0o644, "a.txt": 0o644} {
		st, err := os.Stat(filepath.Join(wsPath(s, id), p))
		require.NoError(t, err)
		require.Equal(t, want, st.Mode().Perm(), p)
	}

	list, err := s.ListFiles(owner, id, "")
	require.NoError(t, err)
	require.Equal(t, []string{"a.txt", "in", "in/bytes.bin"}, paths(list))
	require.Equal(t, sum("new"), list[0].SHA256)
	require.Equal(t, TypeDir, list[1].Type)
	sub, err := s.ListFiles(owner, id, "in")
	require.NoError(t, err)
	require.Equal(t, []string{"in/bytes.bin"}, paths(sub))
	one, err := s.ListFiles(owner, id, "a.txt")
	require.NoError(t, err)
	require.Equal(t, []string{"a.txt"}, paths(one))
	_, err = s.ListFiles(owner, id, "nope")
	require.ErrorIs(t, err, ErrFileNotFound)

	info, err := s.Get(owner, id)
	require.NoError(t, err)
	require.Equal(t, int64(259), info.BytesUsed)

	_, _, err = s.OpenFile(owner, id, "in")
	require.ErrorIs(t, err, ErrNotFile)
	require.ErrorContains(t, err, "a folder")
	_, _, err = s.OpenFile(owner, id, "missing")
	require.ErrorIs(t, err, ErrFileNotFound)
	_, _, err = s.OpenFile(owner, id, "a.txt/x")
	require.ErrorIs(t, err, ErrBadPath, "a file as a folder")

	require.NoError(t, s.DeleteFile(owner, id, "a.txt"))
	require.ErrorIs(t, s.DeleteFile(owner, id, "a.txt"), ErrFileNotFound)
	require.NoError(t, s.DeleteFile(owner, id, "in"))
	list, err = s.ListFiles(owner, id, "")
	require.NoError(t, err)
	require.Empty(t, list)
	info, err = s.Get(owner, id)
	require.NoError(t, err)
	require.Zero(t, info.BytesUsed)
}

func paths(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out
}

func TestPutFileRefusals(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	put(t, s, id, "file", "x")
	put(t, s, id, "dir/f", "y")
	tests := []struct {
		name, path string
		is         error
		msg        string
	}{
		{"parent is a file", "file/x", ErrBadPath, "not a folder"},
		{"target is a folder", "dir", ErrBadPath, "folder"},
		{"dotdot", "../x", ErrBadPath, ".."},
		{"absolute", "/tmp/x", ErrBadPath, "absolute"},
		{"reserved", fsroot.TempPrefix + "x", ErrBadPath, "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.PutFile(owner, id, tt.path, strings.NewReader("z"))
			require.ErrorIs(t, err, tt.is)
			require.ErrorContains(t, err, tt.msg)
		})
	}
	require.Equal(t, "x", readAll(t, s, id, "file"))
	requireNoTemp(t, s, id)
}

// requireNoTemp asserts no temp file is left anywhere in the workspace.
func requireNoTemp(t testing.TB, s *Store, id string) {
	t.Helper()
	err := filepath.WalkDir(wsPath(s, id), func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		require.False(t, strings.HasPrefix(d.Name(), fsroot.TempPrefix), "temp left: %s", p)
		return nil
	})
	require.NoError(t, err)
}

func TestQuotaStopsWhileReading(t *testing.T) {
	const quota = 1 << 20
	s := openStore(t, Limits{Quota: quota})
	id := create(t, s)
	put(t, s, id, "keep", strings.Repeat("k", 1000))
	before := treeHash(t, wsPath(s, id))

	cr := &countingReader{r: zeros{}}
	_, err := s.PutFile(owner, id, "big", cr)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, ErrLimit)
	require.Equal(t, LimitQuota, le.Limit)
	require.Equal(t, int64(quota), le.Value)
	require.Contains(t, err.Error(), "sessions.quota")
	require.LessOrEqual(t, cr.n, int64(quota+copyBuf), "read far past the quota")
	require.Equal(t, before, treeHash(t, wsPath(s, id)), "a refused upload leaves nothing")

	// Exactly the room left fits; one byte more does not.
	room := int64(quota - 1000)
	_, err = s.PutFile(owner, id, "new/deep/fit", io.LimitReader(zeros{}, room+1))
	require.ErrorAs(t, err, &le)
	require.NoDirExists(t, filepath.Join(wsPath(s, id), "new"), "folders made for a refused upload are removed")
	_, err = s.PutFile(owner, id, "fit", io.LimitReader(zeros{}, room))
	require.NoError(t, err)
	// Replacing a file may use its own size again.
	_, err = s.PutFile(owner, id, "fit", io.LimitReader(zeros{}, room))
	require.NoError(t, err)
	info, err := s.Get(owner, id)
	require.NoError(t, err)
	require.Equal(t, int64(quota), info.BytesUsed)
	l, err := s.Acquire(t.Context(), owner, id)
	require.NoError(t, err)
	require.Zero(t, l.Remaining)
	l.Release()
}

func TestTotalBytesAcrossSessions(t *testing.T) {
	s := openStore(t, Limits{Quota: 1 << 20, MaxTotalBytes: 1500})
	a, b := create(t, s), create(t, s)
	put(t, s, a, "x", strings.Repeat("a", 1000))
	_, err := s.PutFile(owner, b, "y", io.LimitReader(zeros{}, 600))
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitTotalBytes, le.Limit)
	require.Contains(t, err.Error(), "sessions.max_total_bytes")
	put(t, s, b, "y", strings.Repeat("b", 500))
	require.NoError(t, s.Delete(owner, a))
	put(t, s, b, "z", strings.Repeat("c", 1000))
}

func TestMaxFilesAndDepth(t *testing.T) {
	s := openStore(t, Limits{MaxFiles: 3, MaxDepth: 3})
	id := create(t, s)
	put(t, s, id, "a/b", "1") // 2 entries
	_, err := s.PutFile(owner, id, "c/d", strings.NewReader("2"))
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitMaxFiles, le.Limit)
	require.NoDirExists(t, filepath.Join(wsPath(s, id), "c"))
	put(t, s, id, "a/b", "replaced") // no new entry
	put(t, s, id, "a/c", "3")
	_, err = s.PutFile(owner, id, "a/b/c/d", strings.NewReader("deep"))
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitMaxDepth, le.Limit)
	require.ErrorIs(t, err, ErrBadPath)
}

func TestListingBound(t *testing.T) {
	s := openStore(t, Limits{MaxFiles: 4})
	id := create(t, s)
	for _, n := range []string{"a", "b", "c", "d", "e"} { // as a run would: past the bound
		require.NoError(t, os.WriteFile(filepath.Join(wsPath(s, id), n), nil, 0o644))
	}
	_, err := s.ListFiles(owner, id, "")
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitMaxFiles, le.Limit)
	one, err := s.ListFiles(owner, id, "a")
	require.NoError(t, err)
	require.Len(t, one, 1)
}

func TestConcurrentUploadsRespectTotal(t *testing.T) {
	const total = 1 << 20
	s := openStore(t, Limits{Quota: total, MaxTotalBytes: total})
	ids := []string{create(t, s), create(t, s), create(t, s), create(t, s)}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 4 {
				_, _ = s.PutFile(owner, id, fmt.Sprintf("f%d-%d", i, j), io.LimitReader(zeros{}, 100<<10))
			}
		}()
	}
	wg.Wait()
	var sumUsed int64
	for _, id := range ids {
		info, err := s.Get(owner, id)
		require.NoError(t, err)
		sumUsed += info.BytesUsed
		l, err := s.Acquire(t.Context(), owner, id)
		require.NoError(t, err)
		require.Equal(t, info.BytesUsed, l.Used)
		l.Release()
	}
	require.LessOrEqual(t, sumUsed, int64(total))
	require.Greater(t, sumUsed, int64(total-200<<10), "uploads filled the room")
}
