package cow

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWrittenCountsTheWriteLayer: a fresh view has written next to
// nothing; a file of 100 KiB written through it adds at least its bytes,
// in pages; a file of the folder read is not counted; once closed, Written
// fails rather than tell another file system's figures.
func TestWrittenCountsTheWriteLayer(t *testing.T) {
	lower := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(lower, "big"), make([]byte, 256<<10), 0o644))
	v, ws := mountTest(t, lower, 1<<20)
	fresh, err := v.Written()
	require.NoError(t, err)
	require.Less(t, fresh, int64(64<<10), "a fresh view holds no file")
	out, err := asSandboxUser(t, `cd `+ws+` && cat big > /dev/null && head -c 102400 /dev/zero > new`)
	require.NoError(t, err, out)
	n, err := v.Written()
	require.NoError(t, err)
	require.GreaterOrEqual(t, n-fresh, int64(102400), "the new file's bytes")
	require.Less(t, n, int64(256<<10), "the folder's file read is not written")

	require.NoError(t, v.Close())
	_, err = v.Written()
	require.Error(t, err)
}

// BenchmarkWritten is the cost of one workspace_bytes figure per sample.
func BenchmarkWritten(b *testing.B) {
	v, _ := mountTest(b, b.TempDir(), 1<<20)
	for b.Loop() {
		if _, err := v.Written(); err != nil {
			b.Fatal(err)
		}
	}
}
