package fresh

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFigures(t *testing.T) {
	f := Figures[string, int64]{TTL: 2 * time.Second}
	t0 := time.Unix(1_800_000_000, 0)
	_, ok := f.Get("a", t0)
	require.False(t, ok, "nothing put")

	f.Put("a", 7, t0)
	v, ok := f.Get("a", t0.Add(time.Second))
	require.True(t, ok)
	require.EqualValues(t, 7, v)
	_, ok = f.Get("a", t0.Add(2*time.Second))
	require.False(t, ok, "stale at TTL")
	_, ok = f.Get("a", t0.Add(-time.Second))
	require.False(t, ok, "a clock set back makes it stale")

	f.Put("b", 1, t0.Add(3*time.Second))
	f.mu.Lock()
	_, kept := f.m["a"]
	f.mu.Unlock()
	require.False(t, kept, "a stale value is let go at the next put")

	f.Forget("b")
	_, ok = f.Get("b", t0.Add(3*time.Second))
	require.False(t, ok, "forgotten")

	var zero Figures[string, int]
	zero.Put("x", 1, t0)
	_, ok = zero.Get("x", t0)
	require.False(t, ok, "TTL 0 keeps nothing")
}
