package skillpack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A digest the cache holds is answered without reading the folder; a
// folder changed since its digest was taken is packed again, as it is now.
func TestCacheByDigest(t *testing.T) {
	c := NewCache(big, 1<<20)
	dir := skillDir(t, 0o755)
	a, err := c.Get("hello", dir, "")
	require.NoError(t, err)
	require.EqualValues(t, 1, c.Packs())

	require.NoError(t, os.RemoveAll(dir)) // a hit never reads it
	b, err := c.Get("hello", dir, a.Digest)
	require.NoError(t, err)
	require.Same(t, a, b)
	require.EqualValues(t, 1, c.Packs())

	changed := skillDir(t, 0o755)
	require.NoError(t, os.WriteFile(filepath.Join(changed, "SKILL.md"), []byte("new"), 0o644))
	d, err := c.Get("hello", changed, "sha256:"+strings.Repeat("0", 64)) // a digest from before the change
	require.NoError(t, err)
	require.NotEqual(t, a.Digest, d.Digest)
	require.EqualValues(t, 2, c.Packs())
}

// The cache keeps at most its byte budget, dropping the least recently
// used archive first.
func TestCacheEvicts(t *testing.T) {
	one, err := Pack("hello", skillDir(t, 0o755), big)
	require.NoError(t, err)
	c := NewCache(big, int64(2*len(one.Tar)))
	dirs := []string{skillDir(t, 0o755), skillDir(t, 0o644), skillDir(t, 0o700)}
	require.NoError(t, os.WriteFile(filepath.Join(dirs[2], "SKILL.md"), []byte("---\nname: hello\n---\nho\n"), 0o644))
	var ds []string
	for _, d := range dirs {
		a, err := c.Get("hello", d, "")
		require.NoError(t, err)
		ds = append(ds, a.Digest)
	}
	require.EqualValues(t, 3, c.Packs())
	_, err = c.Get("hello", dirs[2], ds[2])
	require.NoError(t, err)
	require.EqualValues(t, 3, c.Packs(), "the newest is kept")
	_, err = c.Get("hello", dirs[0], ds[0])
	require.NoError(t, err)
	require.EqualValues(t, 4, c.Packs(), "the oldest was dropped")
}
