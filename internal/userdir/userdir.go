// Package userdir finds sandboxrun's private folders for the current user on
// this host, where it keeps small files that must not be shared with, or
// planted by, other users: image build locks, the sandboxes' hosts file.
package userdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Private returns the folder for purpose ("locks", "hosts"):
// $XDG_RUNTIME_DIR/sandboxrun-<purpose> when XDG_RUNTIME_DIR is set, else
// sandboxrun-<purpose>-<uid> in the temp directory, creating it (0700) when
// missing. The folder must be a real folder that belongs to this user and
// is closed to others: in a shared /tmp, someone else's folder (or a symlink
// they planted) could block or redirect what sandboxrun keeps there.
func Private(purpose string) (string, error) {
	uid := os.Getuid()
	dir := filepath.Join(os.TempDir(), "sandboxrun-"+purpose+"-"+strconv.Itoa(uid))
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" && filepath.IsAbs(xdg) {
		// The user's own runtime folder; what we create in it is checked below.
		if fi, err := os.Stat(xdg); err == nil && fi.IsDir() { //nolint:gosec // see above
			dir = filepath.Join(xdg, "sandboxrun-"+purpose)
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) { //nolint:gosec // ownership and mode are checked next
		return "", fmt.Errorf("creating the %s folder %s: %w", purpose, dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("checking the %s folder %s: %w", purpose, dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != uid || st.Mode&0o022 != 0 {
		return "", fmt.Errorf("%s folder %s is not a folder owned by uid %d and closed to others; remove it and retry", purpose, dir, uid)
	}
	return dir, nil
}
