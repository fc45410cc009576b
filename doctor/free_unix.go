//go:build unix

package doctor

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged writer may still use at path.
func freeBytes(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil //nolint:gosec,unconvert // Bsize is positive; its type differs by platform
}
