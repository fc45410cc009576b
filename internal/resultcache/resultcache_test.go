package resultcache

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestResultCacheExpiresAndEvicts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(func() time.Time { return now })
	c.Put("a", &sandbox.Result{ID: "ra", Stdout: "x", Command: []string{"p"}}, time.Minute, 1<<20)
	got, ok := c.Get("a")
	require.True(t, ok)
	got.Command[0] = "changed"
	again, _ := c.Get("a")
	require.Equal(t, "p", again.Command[0], "a hit is a copy")

	now = now.Add(time.Minute)
	_, ok = c.Get("a")
	require.False(t, ok, "expired at its ttl")
	require.Zero(t, c.bytes)

	// Past max_bytes the least recently used goes first.
	big := strings.Repeat("y", 1000)
	c.Put("1", &sandbox.Result{Stdout: big}, time.Hour, 4000)
	c.Put("2", &sandbox.Result{Stdout: big}, time.Hour, 4000)
	_, _ = c.Get("1")
	c.Put("3", &sandbox.Result{Stdout: big}, time.Hour, 4000)
	_, ok1 := c.Get("1")
	_, ok2 := c.Get("2")
	_, ok3 := c.Get("3")
	require.Equal(t, []bool{true, false, true}, []bool{ok1, ok2, ok3})
	require.LessOrEqual(t, c.bytes, int64(4000))

	c.Put("huge", &sandbox.Result{Stdout: strings.Repeat("z", 5000)}, time.Hour, 4000)
	_, ok = c.Get("huge")
	require.False(t, ok, "a Result larger than the bound is not kept")
}
