package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

func TestCreateGetListDelete(t *testing.T) {
	clk := newClock()
	s := openStore(t, Limits{}, WithClock(clk.Now))
	a, err := s.Create(owner, 0)
	require.NoError(t, err)
	require.Len(t, a.ID, 26)
	require.True(t, validID(a.ID))
	require.Equal(t, DefaultTTL, a.TTL)
	require.Equal(t, clk.Now().Add(DefaultTTL), a.ExpiresAt)
	require.Equal(t, DefaultQuota, a.BytesLimit)
	fi, err := os.Stat(wsPath(s, a.ID))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

	clk.Add(time.Second)
	b, err := s.Create(owner, time.Hour)
	require.NoError(t, err)
	require.NotEqual(t, a.ID, b.ID)
	_, err = s.Create("owner-b", 0)
	require.NoError(t, err)

	list := s.List(owner)
	require.Len(t, list, 2)
	require.Equal(t, []string{a.ID, b.ID}, []string{list[0].ID, list[1].ID})

	clk.Add(time.Minute)
	got, err := s.Get(owner, a.ID)
	require.NoError(t, err)
	require.Equal(t, clk.Now().Add(DefaultTTL), got.ExpiresAt, "Get touches last use")

	require.NoError(t, s.Delete(owner, a.ID))
	_, err = s.Get(owner, a.ID)
	require.ErrorIs(t, err, ErrNotFound)
	require.NoDirExists(t, wsPath(s, a.ID))
	require.NoFileExists(t, filepath.Join(s.Root(), "meta", a.ID+".json"))
	require.ErrorIs(t, s.Delete(owner, a.ID), ErrNotFound)
}

func TestRootPermissions(t *testing.T) {
	s := openStore(t, Limits{})
	for name, want := range map[string]os.FileMode{"meta": 0o700, "ws": 0o711} {
		fi, err := os.Stat(filepath.Join(s.Root(), name))
		require.NoError(t, err)
		require.Equal(t, want, fi.Mode().Perm(), name)
	}
	id := create(t, s)
	fi, err := os.Stat(filepath.Join(s.Root(), "meta", id+".json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err := Open(filepath.Join(file, "sub"), Limits{})
	require.ErrorContains(t, err, "sessions root")

	s, err := Open(filepath.Join(dir, "r"), Limits{})
	require.NoError(t, err)
	_, err = Open(filepath.Join(dir, "r"), Limits{})
	require.ErrorContains(t, err, "in use by another sandboxrun process")
	require.NoError(t, s.Close())
	s, err = Open(filepath.Join(dir, "r"), Limits{})
	require.NoError(t, err, "the lock goes with Close")
	require.NoError(t, s.Close())
}

func TestLimits(t *testing.T) {
	s := openStore(t, Limits{MaxPerOwner: 2, MaxTTL: time.Hour})
	_, err := s.Create(owner, 2*time.Hour)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitMaxTTL, le.Limit)
	require.ErrorIs(t, err, ErrLimit)
	_, err = s.Create(owner, -time.Second)
	require.ErrorIs(t, err, ErrBadTTL)

	create(t, s)
	create(t, s)
	_, err = s.Create(owner, 0)
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitPerOwner, le.Limit)
	require.Contains(t, err.Error(), "sessions.max_per_token")
	_, err = s.Create("other", 0)
	require.NoError(t, err, "the bound is per owner")
}

func TestWithDefaults(t *testing.T) {
	l := Limits{}.WithDefaults()
	require.Equal(t, Limits{TTL: DefaultTTL, MaxTTL: DefaultMaxTTL, Quota: DefaultQuota, MaxPerOwner: 32,
		MaxTotalBytes: DefaultMaxTotalBytes, MaxFiles: 10000, MaxDepth: 32, MaxSnapshots: DefaultMaxSnapshots}, l)
	l = Limits{TTL: 48 * time.Hour}.WithDefaults()
	require.Equal(t, 48*time.Hour, l.MaxTTL, "a default TTL above the ceiling lifts the ceiling")
}

func TestOtherOwnerSeesNothing(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	put(t, s, id, "a.txt", "hello")
	other := "owner-b"
	_, err := s.Get(other, id)
	require.ErrorIs(t, err, ErrNotFound)
	require.Empty(t, s.List(other))
	_, err = s.PutFile(other, id, "b.txt", strings.NewReader("x"))
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = s.OpenFile(other, id, "a.txt")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.ListFiles(other, id, "")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.DeleteFile(other, id, "a.txt"), ErrNotFound)
	_, err = s.PutTar(other, id, strings.NewReader(""))
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.WriteTar(other, id, &strings.Builder{}), ErrNotFound)
	_, err = s.Acquire(context.Background(), other, id)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Delete(other, id), ErrNotFound)
	// The same error as for an id that does not exist at all.
	_, err2 := s.Get(other, newID())
	require.ErrorIs(t, err2, ErrNotFound)
	require.Equal(t, strings.ReplaceAll(err.Error(), id, "ID"), strings.ReplaceAll(err2.Error(), err2.Error()[len("session not found: \""):][:26], "ID"))
	require.Equal(t, "hello", readAll(t, s, id, "a.txt"), "the owner's files are intact")
	for _, bad := range []string{"", "../x", strings.ToUpper(id), id + "/", "a"} {
		_, err := s.Get(owner, bad)
		require.ErrorIs(t, err, ErrNotFound, bad)
	}
}

func TestTTLExpiryAndSweep(t *testing.T) {
	clk := newClock()
	s := openStore(t, Limits{TTL: 10 * time.Minute}, WithClock(clk.Now))
	idle := create(t, s)
	used := create(t, s)
	leased := create(t, s)
	l, err := s.Acquire(context.Background(), owner, leased)
	require.NoError(t, err)

	clk.Add(6 * time.Minute)
	_, err = s.Get(owner, used)
	require.NoError(t, err)
	require.Empty(t, s.Sweep())

	clk.Add(5 * time.Minute) // idle: 11m, used: 5m, leased: 11m but held
	_, err = s.Get(owner, idle)
	require.ErrorIs(t, err, ErrNotFound, "expired before the sweep")
	require.Equal(t, []string{idle}, s.Sweep())
	require.NoDirExists(t, wsPath(s, idle))
	_, err = s.Get(owner, used)
	require.NoError(t, err)
	require.NoError(t, l.Ctx.Err(), "a held session is not swept")
	l.Release() // touches
	clk.Add(9 * time.Minute)
	require.Empty(t, s.Sweep())
	clk.Add(2 * time.Minute)
	require.ElementsMatch(t, []string{used, leased}, s.Sweep())
	require.Empty(t, s.List(owner))
}

func TestAcquireSerializes(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	l1, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	require.Equal(t, wsPath(s, id), l1.Dir)
	require.Equal(t, DefaultQuota, l1.Remaining)

	// A second Acquire waits: bounded by its context it gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, owner, id)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan *Lease)
	go func() {
		l2, err := s.Acquire(context.Background(), owner, id)
		if err != nil {
			close(got)
			return
		}
		got <- l2
	}()
	// An upload waits too.
	putDone := make(chan error)
	go func() {
		_, err := s.PutFile(owner, id, "x", strings.NewReader("x"))
		putDone <- err
	}()
	select {
	case <-got:
		t.Fatal("second Acquire did not wait")
	case <-putDone:
		t.Fatal("PutFile did not wait for the lease")
	case <-time.After(100 * time.Millisecond):
	}
	// The run's changes come back, as a runner's hand-back gives them,
	// then it releases.
	_, err = l1.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tarFile{name: "out.bin", body: strings.Repeat("x", 1000)})))
	require.NoError(t, err)
	l1.Release()
	l1.Release() // idempotent
	l2 := <-got
	require.NotNil(t, l2)
	require.GreaterOrEqual(t, l2.Used, int64(1000), "the store counted what the run's changes wrote") // and the upload, when it came first
	require.NotNil(t, l2.Facts)
	require.Equal(t, l2.Used, l2.Facts.Bytes, "the view's room comes from the store's count")
	l2.Release()
	require.NoError(t, <-putDone)
	info, err := s.Get(owner, id)
	require.NoError(t, err)
	require.Equal(t, int64(1001), info.BytesUsed)
}

func TestDeleteCancelsLease(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	released := make(chan struct{})
	go func() { // a run that stops when its context is cancelled
		<-l.Ctx.Done()
		time.Sleep(20 * time.Millisecond)
		l.Release()
		close(released)
	}()
	waiter := make(chan error)
	go func() {
		_, err := s.Acquire(context.Background(), owner, id)
		waiter <- err
	}()
	require.NoError(t, s.Delete(owner, id))
	select {
	case <-released:
	default:
		t.Fatal("Delete returned before the run released")
	}
	require.ErrorIs(t, <-waiter, ErrNotFound)
	require.ErrorIs(t, l.Ctx.Err(), context.Canceled)
	require.NoDirExists(t, l.Dir)
}

func TestDeleteWaitIsBounded(t *testing.T) {
	old := deleteWait
	deleteWait = 50 * time.Millisecond
	t.Cleanup(func() { deleteWait = old })
	s := openStore(t, Limits{})
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	require.NoError(t, s.Delete(owner, id)) // the holder never releases
	require.NoDirExists(t, l.Dir)
	l.Release() // late: harmless
}

func TestPersistAcrossReopen(t *testing.T) {
	clk := newClock()
	root := filepath.Join(t.TempDir(), "r")
	s, err := Open(root, Limits{TTL: time.Hour}, WithClock(clk.Now))
	require.NoError(t, err)
	keep := create(t, s)
	put(t, s, keep, "dir/a.txt", "hello")
	expire, err := s.Create(owner, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Get(owner, keep)
	require.ErrorIs(t, err, ErrClosed)

	// Leftovers a crash could leave, and damage.
	ws := filepath.Join(root, "ws")
	require.NoError(t, os.WriteFile(filepath.Join(ws, keep, fsroot.TempPrefix+"1"), []byte("half"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, keep, "dir", fsroot.TempPrefix+"2"), []byte("half"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "meta", keep+".json"+metaTempMark+"x"), []byte("{"), 0o600))
	orphan := newID()
	require.NoError(t, os.Mkdir(filepath.Join(ws, orphan), 0o755))
	corrupt := newID()
	require.NoError(t, os.Mkdir(filepath.Join(ws, corrupt), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "meta", corrupt+".json"), []byte(`{"version":1,"id":`), 0o600))

	clk.Add(2 * time.Minute)
	s, err = Open(root, Limits{TTL: time.Hour}, WithClock(clk.Now))
	require.NoError(t, err)
	defer s.Close()
	info, err := s.Get(owner, keep)
	require.NoError(t, err)
	require.Equal(t, int64(5), info.BytesUsed)
	require.Equal(t, "hello", readAll(t, s, keep, "dir/a.txt"))
	_, err = s.Get(owner, expire.ID)
	require.ErrorIs(t, err, ErrNotFound)
	for _, gone := range []string{filepath.Join(ws, expire.ID), filepath.Join(ws, orphan), filepath.Join(ws, corrupt),
		filepath.Join(ws, keep, fsroot.TempPrefix+"1"), filepath.Join(ws, keep, "dir", fsroot.TempPrefix+"2"),
		filepath.Join(root, "meta", keep+".json"+metaTempMark+"x"), filepath.Join(root, "meta", corrupt+".json")} {
		_, err := os.Lstat(gone)
		require.True(t, errors.Is(err, os.ErrNotExist), "%s should be gone", gone)
	}
}

// TestReservedNamesCannotHideBytes: a run that stores data under the
// store's reserved temp names neither escapes the quota nor keeps them.
func TestReservedNamesCannotHideBytes(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	_, err = l.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t,
		tarFile{name: fsroot.TempPrefix + "x", body: strings.Repeat("x", 1000)},
		tarFile{name: "a/" + fsroot.TempPrefix + "dir/y", body: strings.Repeat("y", 1000)},
		tarFile{name: "kept", body: strings.Repeat("k", 10)})))
	require.NoError(t, err)
	l.Release()
	requireCounted(t, s, id)
	require.NoFileExists(t, filepath.Join(l.Dir, fsroot.TempPrefix+"x"))
	require.NoDirExists(t, filepath.Join(l.Dir, "a", fsroot.TempPrefix+"dir"))
	info, err := s.Get(owner, id)
	require.NoError(t, err)
	require.Equal(t, int64(10), info.BytesUsed)
}

// TestDeleteDuringUpload: an upload in flight stops at its next chunk and
// leaves nothing; Delete waits for it.
func TestDeleteDuringUpload(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	pr, pw := io.Pipe()
	putErr := make(chan error, 1)
	go func() {
		_, err := s.PutFile(owner, id, "big", pr)
		putErr <- err
	}()
	_, err := pw.Write(make([]byte, 1000))
	require.NoError(t, err)
	delErr := make(chan error, 1)
	go func() { delErr <- s.Delete(owner, id) }()
	time.Sleep(50 * time.Millisecond)
	go func() { _, _ = pw.Write(make([]byte, 1000)); pw.Close() }()
	require.ErrorIs(t, <-putErr, ErrNotFound)
	require.NoError(t, <-delErr)
	require.NoDirExists(t, wsPath(s, id))
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Zero(t, s.total, "no bytes left charged")
}

func TestMetaValidation(t *testing.T) {
	id := newID()
	good := meta{Version: metaVersion, ID: id, Owner: "o", CreatedAt: time.Now(), LastUsed: time.Now(), TTL: time.Minute}
	require.NoError(t, good.validate(id+".json"))
	for name, m := range map[string]meta{
		"version": {Version: 9, ID: id, CreatedAt: good.CreatedAt, LastUsed: good.LastUsed, TTL: time.Minute},
		"id":      {Version: metaVersion, ID: newID(), CreatedAt: good.CreatedAt, LastUsed: good.LastUsed, TTL: time.Minute},
		"ttl":     {Version: metaVersion, ID: id, CreatedAt: good.CreatedAt, LastUsed: good.LastUsed},
		"times":   {Version: metaVersion, ID: id, TTL: time.Minute},
	} {
		require.Error(t, m.validate(id+".json"), name)
	}
	for _, bad := range []string{"", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", strings.Repeat("a", 25), strings.Repeat("1", 26), "../../../../../../../../etc"} {
		require.False(t, validID(bad), bad)
	}
}

func TestCloseWithLeaseHeld(t *testing.T) {
	s := openStore(t, Limits{})
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice is fine")
	l.Release() // after Close: no panic, nothing written
	_, err = s.Create(owner, 0)
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Acquire(context.Background(), owner, id)
	require.ErrorIs(t, err, ErrClosed)
	require.Empty(t, s.Sweep())
}

func TestConcurrentCreatesRespectPerOwner(t *testing.T) {
	s := openStore(t, Limits{MaxPerOwner: 3})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Create(owner, 0); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else {
				require.ErrorIs(t, err, ErrLimit)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 3, ok)
	require.Len(t, s.List(owner), 3)
	entries, err := os.ReadDir(filepath.Join(s.Root(), "ws"))
	require.NoError(t, err)
	require.Len(t, entries, 3, "refused creates leave no folder")
}

func TestReleasePersists(t *testing.T) {
	clk := newClock()
	s := openStore(t, Limits{}, WithClock(clk.Now))
	id := create(t, s)
	l, err := s.Acquire(context.Background(), owner, id)
	require.NoError(t, err)
	_, err = l.ApplyChanges(context.Background(), bytes.NewReader(layerOf(t, tarFile{name: "out", body: strings.Repeat("o", 42)})))
	require.NoError(t, err)
	clk.Add(time.Second)
	l.Release()
	m, err := readMeta(s.metaDir, id+".json")
	require.NoError(t, err)
	require.Equal(t, int64(42), m.BytesUsed)
	require.True(t, clk.Now().Equal(m.LastUsed))
}
