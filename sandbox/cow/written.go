package cow

import (
	"fmt"
	"math"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Written is what the run's writes hold in the view now: the bytes in use
// on the upper layer's tmpfs (files created or copied up, in whole pages,
// with their folders' entries; a file of the folder the run deleted counts
// nothing, a file it changed counts whole once copied up). It is one
// statfs, exact to the page, and cheap enough to read every sample. It
// fails once the view is unmounted (never the host's disk's figures).
func (v *View) Written() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(v.scratch, UpDir), &st); err != nil {
		return 0, fmt.Errorf("workspace bytes written: %w", err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		return 0, fmt.Errorf("workspace bytes written: the view's write layer is not mounted")
	}
	pages := int64(min(st.Blocks-st.Bfree, math.MaxInt64))
	if st.Bsize > 0 && pages > math.MaxInt64/st.Bsize {
		return math.MaxInt64, nil
	}
	return pages * st.Bsize, nil
}
