package images

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// removeTree deletes a bootstrap target directory. debootstrap mounts proc
// and sysfs inside it (and bind-mounts /dev entries in some containers);
// its exit trap unmounts them, but not when it was killed. os.RemoveAll
// would walk into a mount that is still there and delete what is behind
// it, so everything mounted below dir is lazily unmounted first and the
// removal is refused when anything is still mounted.
func removeTree(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return where.Errorf("resolving %s: %w", where.Path(dir), err)
	}
	mounts, err := currentMountsUnder(real)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mounts {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	left, err := currentMountsUnder(real)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("not removing %s: still mounted: %v (unmount them with `umount -l`, then delete the directory)", real, left))
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(real); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", real, err))
	}
	return errors.Join(errs...)
}

func currentMountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("listing mounts: %w", err)
	}
	defer f.Close()
	mounts, err := mountsUnder(f, dir)
	if err != nil {
		return nil, fmt.Errorf("listing mounts: %w", err)
	}
	return mounts, nil
}
