package skillstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// crash lets go of s's staging lock and leaves its staging folder, as a
// killed process does.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	require.NoError(t, s.stageLock.Close())
	s.stageLock = nil
}

// twoStores opens two stores on one folder, as two replicas do.
func twoStores(t *testing.T, lim Limits) (*Store, *Store, string) {
	t.Helper()
	a, root := openStore(t, lim)
	b, err := Open(root, lim)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return a, b, root
}

func TestTwoStoresShareUploads(t *testing.T) {
	a, b, root := twoStores(t, Limits{})
	up, err := put(t, a, ownerA, FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)

	list, err := b.List(ownerA)
	require.NoError(t, err)
	require.Len(t, list, 1, "the other store sees the upload at once")
	r, err := b.Resolve(ownerA, "hello@"+up.Digest)
	require.NoError(t, err)
	require.Equal(t, up.Version, r.Version)
	again, err := put(t, b, ownerA, FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)
	require.False(t, again.Created, "the same content through the other store is the stored version")
	v2, err := put(t, b, ownerA, FormatTar, tarOf(t, append(demo("", "hello", ""), ent{name: "x", body: "2"})))
	require.NoError(t, err)
	require.Equal(t, "2", v2.Version, "versions are numbered across stores")

	require.NoError(t, b.DeleteVersion(ownerA, "hello", "1"))
	_, err = a.Resolve(ownerA, "hello@1")
	require.ErrorIs(t, err, ErrNotFound, "a version deleted through one store is gone from the other")
	require.NoError(t, a.Delete(ownerA, "hello"))
	_, err = b.Versions(ownerA, "hello")
	require.ErrorIs(t, err, ErrNotFound)
	list, err = b.List(ownerA)
	require.NoError(t, err)
	require.Empty(t, list)
	requireNothingKept(t, root, ownerA)
}

// TestLimitsHoldAcrossStores races uploads through two stores on one
// folder: the token's limits hold exactly, whichever store takes each.
func TestLimitsHoldAcrossStores(t *testing.T) {
	const workers = 6
	for _, tc := range []struct {
		name  string
		lim   Limits
		skill func(i int) []ent
		limit string
		keep  int
	}{
		{"skills", Limits{MaxSkills: 3}, func(i int) []ent { return demo("", fmt.Sprintf("s%d", i), "") }, LimitSkills, 3},
		{"versions", Limits{MaxVersions: 2}, func(i int) []ent { return append(demo("", "one", ""), ent{name: "x", body: fmt.Sprint(i)}) }, LimitVersions, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, _ := twoStores(t, tc.lim)
			var wg sync.WaitGroup
			errs := make([]error, 2*workers)
			for i := range errs {
				s := a
				if i%2 == 1 {
					s = b
				}
				data := tarOf(t, tc.skill(i))
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = put(t, s, ownerA, FormatTar, data)
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
					continue
				}
				var lim *LimitError
				require.True(t, errors.As(err, &lim), "%v", err)
				require.Equal(t, tc.limit, lim.Limit)
			}
			require.Equal(t, tc.keep, ok, "exactly the limit's uploads are stored")
			list, err := b.List(ownerA)
			require.NoError(t, err)
			n := 0
			seqs := map[int]bool{}
			for _, sk := range list {
				n += len(sk.Versions)
				for _, v := range sk.Versions {
					require.False(t, seqs[v.Seq] && tc.name == "versions", "two versions numbered %d", v.Seq)
					seqs[v.Seq] = true
				}
			}
			require.Equal(t, tc.keep, n)
		})
	}
}

// TestDeletesRaceUploadsAcrossStores uploads and deletes one skill through
// two stores at once: every call either succeeds or says the skill is not
// there, and what is left is whole.
func TestDeletesRaceUploadsAcrossStores(t *testing.T) {
	a, b, root := twoStores(t, Limits{MaxVersions: 100})
	var wg sync.WaitGroup
	for i := range 8 {
		s, o := a, b
		if i%2 == 1 {
			s, o = b, a
		}
		data := tarOf(t, append(demo("", "hello", ""), ent{name: "x", body: fmt.Sprint(i)}))
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := put(t, s, ownerA, FormatTar, data)
			require.NoError(t, err)
		}()
		go func() {
			defer wg.Done()
			if err := o.Delete(ownerA, "hello"); err != nil {
				require.ErrorIs(t, err, ErrNotFound)
			}
		}()
	}
	wg.Wait()
	if vs, err := a.Versions(ownerA, "hello"); err == nil {
		for _, v := range vs {
			r, err := b.Resolve(ownerA, "hello@"+v.Digest)
			require.NoError(t, err)
			d, err := Digest(r.Dir)
			require.NoError(t, err)
			require.Equal(t, v.Digest, d, "a stored version is whole")
		}
		require.NoError(t, b.Delete(ownerA, "hello"))
	}
	requireNothingKept(t, root, ownerA)
}

// TestSweepSparesLiveStaging: a store removes the staging folders of
// crashed processes, never the work in flight of a live one.
func TestSweepSparesLiveStaging(t *testing.T) {
	a, root := openStore(t, Limits{})
	inflight := filepath.Join(a.stage, "up-inflight")
	require.NoError(t, os.Mkdir(inflight, 0o700))
	old := time.Now().Add(-2 * legacyGrace)
	require.NoError(t, os.Chtimes(a.stage, old, old))
	// Entries of a server that kept one staging folder per store: an old
	// one is left over, a recent one may be an upload in flight. A folder
	// of a process that died before it locked it: old, it goes; recent, it
	// may be a process starting.
	staging := filepath.Join(root, stagingDir)
	for _, n := range []string{"up-old", "up-new", newPrefix + "old", newPrefix + "new"} {
		require.NoError(t, os.Mkdir(filepath.Join(staging, n), 0o700))
	}
	require.NoError(t, os.Chtimes(filepath.Join(staging, "up-old"), old, old))
	require.NoError(t, os.Chtimes(filepath.Join(staging, newPrefix+"old"), old, old))

	b, err := Open(root, Limits{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.DirExists(t, inflight, "a live store's upload in flight is left alone")
	require.NoDirExists(t, filepath.Join(staging, "up-old"))
	require.DirExists(t, filepath.Join(staging, "up-new"))
	require.NoDirExists(t, filepath.Join(staging, newPrefix+"old"))
	require.DirExists(t, filepath.Join(staging, newPrefix+"new"))

	crash(t, a)
	// Any later upload through a live store sweeps, not only a restart.
	_, err = put(t, b, ownerA, FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)
	require.NoDirExists(t, a.stage, "a crashed store's staging folder is removed")
	require.NoError(t, os.Remove(filepath.Join(staging, "up-new")))
	require.NoError(t, os.Remove(filepath.Join(staging, newPrefix+"new")))
	requireNothingKept(t, root, ownerA)
}

// TestStagingMadeAgain: a server of the layout before this one removes the
// whole staging folder when it starts (a rolling upgrade); the stores
// running make theirs again at their next upload or delete.
func TestStagingMadeAgain(t *testing.T) {
	a, b, root := twoStores(t, Limits{})
	require.NoError(t, os.RemoveAll(filepath.Join(root, stagingDir)))
	var wg sync.WaitGroup
	for i, s := range []*Store{a, b, a, b} {
		data := tarOf(t, demo("", fmt.Sprintf("s%d", i), ""))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := put(t, s, ownerA, FormatTar, data)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	require.NoError(t, os.RemoveAll(filepath.Join(root, stagingDir)))
	require.NoError(t, b.Delete(ownerA, "s0"))
	procs, err := os.ReadDir(filepath.Join(root, stagingDir))
	require.NoError(t, err)
	require.Len(t, procs, 1, "b's folder, made again; a makes its own at its next call")
	requireNothingKept(t, root, ownerA)
}
