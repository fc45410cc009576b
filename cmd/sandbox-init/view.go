package main

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// errViewMissing starts the refusal of a job whose workspace view did not
// reach the container; the host matches it (frame.ViewMissing).
var errViewMissing = fmt.Errorf("%s", frame.ViewMissing)

// checkView refuses a job whose workspace should be the host's
// copy-on-write view (frame.Job.HoldView) when HoldDir is not an overlay:
// the view was mounted on the host but did not reach this container (the
// engine runs in another mount namespace), and the script would see an
// empty folder and its writes would be lost.
func checkView(job *frame.Job) error {
	if !job.HoldView {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(job.HoldDir, &st); err != nil {
		return fmt.Errorf("%w: %s: %w", errViewMissing, job.HoldDir, err)
	}
	if st.Type != unix.OVERLAYFS_SUPER_MAGIC {
		return fmt.Errorf("%w: %s is not the host's overlay (file system type %#x)", errViewMissing, job.HoldDir, st.Type)
	}
	return nil
}
