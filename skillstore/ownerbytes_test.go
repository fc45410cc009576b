package skillstore

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestOwnerBytes: what an owner's uploads hold, as their versions'
// metadata says; this store's own uploads and removals are counted at
// once, another store's on the same folder (a second replica) within
// bytesTTL; another owner's never.
func TestOwnerBytes(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	a, root := openStore(t, Limits{}, WithClock(clock.Now))
	b, err := Open(root, Limits{}, WithClock(clock.Now))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })

	n, err := a.OwnerBytes(ownerA)
	require.NoError(t, err)
	require.Zero(t, n, "no uploads yet")

	one, err := put(t, a, ownerA, FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)
	n, err = a.OwnerBytes(ownerA)
	require.NoError(t, err)
	require.Equal(t, one.Bytes, n)
	require.Positive(t, n)

	two, err := put(t, a, ownerA, FormatTar, tarOf(t, append(demo("", "hello", ""), ent{name: "x", body: "more bytes"})))
	require.NoError(t, err)
	n, err = a.OwnerBytes(ownerA)
	require.NoError(t, err)
	require.Equal(t, one.Bytes+two.Bytes, n, "this store's own upload is counted at once")

	n, err = a.OwnerBytes(ownerB)
	require.NoError(t, err)
	require.Zero(t, n, "another owner's uploads are not its")

	require.NoError(t, b.DeleteVersion(ownerA, "hello", two.Version))
	n, err = a.OwnerBytes(ownerA)
	require.NoError(t, err)
	require.Equal(t, one.Bytes+two.Bytes, n, "another store's removal is not seen before the figure is bytesTTL old")
	clock.add(bytesTTL)
	n, err = a.OwnerBytes(ownerA)
	require.NoError(t, err)
	require.Equal(t, one.Bytes, n, "and is seen after")

	require.NoError(t, a.Delete(ownerA, "hello"))
	n, err = a.OwnerBytes(ownerA)
	require.NoError(t, err)
	require.Zero(t, n, "this store's own removal is counted at once")
}

// BenchmarkOwnerBytes: what a stored_bytes check costs with 200 uploaded
// versions, counted afresh (every metadata file read) and from the figure
// kept for bytesTTL.
func BenchmarkOwnerBytes(b *testing.B) {
	s, _ := openStore(b, Limits{MaxVersions: 1000})
	for i := range 200 {
		_, err := put(b, s, ownerA, FormatTar, tarOf(b, append(demo("", "hello", ""), ent{name: "n", body: string(rune('a'+i%26)) + time.Duration(i).String()})))
		require.NoError(b, err)
	}
	b.Run("counted", func(b *testing.B) {
		for b.Loop() {
			s.counted.Forget(must(ownerDir(ownerA)))
			_, _ = s.OwnerBytes(ownerA)
		}
	})
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			_, _ = s.OwnerBytes(ownerA)
		}
	})
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
