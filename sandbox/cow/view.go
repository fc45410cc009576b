package cow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Options say what view to mount and where.
type Options struct {
	// Lower is the workspace folder the view shows; it is never written.
	Lower string
	// Scratch is a folder of the view's own (it must not exist yet): the
	// id-mapped lower and the upper tmpfs are mounted below it.
	Scratch string
	// Target is where the merged view is mounted (an existing, empty
	// folder).
	Target string
	// Room is the tmpfs's size: what the run may write, copies of the
	// files it updates included.
	Room int64
	// UID and GID are the sandbox user's: the files of FromUID and
	// FromGID (on disk) appear as theirs, and the view's root is theirs.
	UID, GID         int
	FromUID, FromGID int
}

// The folders below Options.Scratch where the view mounts the mapped
// lower layer and the upper layer's tmpfs (a reaper that finds a view's
// scratch folder unmounts them, in the reverse of this order).
const (
	LowerDir = "lower"
	UpDir    = "up"
	upperDir = "up/upper"
	workDir  = "up/work"
)

// View is a mounted copy-on-write view of a folder.
type View struct {
	scratch, target string
	mounts          []string // in mount order; unmounted in reverse
}

// Mount mounts the view o describes. On failure nothing is left mounted
// and Scratch is removed.
func Mount(o Options) (v *View, err error) {
	if o.Room <= 0 {
		return nil, fmt.Errorf("copy-on-write workspace: room %d is not positive", o.Room)
	}
	v = &View{scratch: o.Scratch, target: o.Target}
	if err := os.Mkdir(o.Scratch, 0o700); err != nil {
		return nil, fmt.Errorf("copy-on-write workspace: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, v.Close())
			v = nil
		}
	}()
	lower := filepath.Join(o.Scratch, LowerDir)
	up := filepath.Join(o.Scratch, UpDir)
	for _, d := range []string{lower, up} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return v, fmt.Errorf("copy-on-write workspace: %w", err)
		}
	}
	if err := v.bindMapped(o.Lower, lower, o); err != nil {
		return v, fmt.Errorf("copy-on-write workspace: map %s for the sandbox user: %w", o.Lower, err)
	}
	opts := "size=" + strconv.FormatInt(o.Room, 10) + ",mode=0700"
	if err := v.mount("tmpfs", up, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return v, fmt.Errorf("copy-on-write workspace: write layer: %w", err)
	}
	upper, work := filepath.Join(o.Scratch, upperDir), filepath.Join(o.Scratch, workDir)
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil { //nolint:gosec // the view's root is the sandbox user's
			return v, fmt.Errorf("copy-on-write workspace: write layer: %w", err)
		}
	}
	// The merged root takes the upper folder's owner.
	if err := os.Chown(upper, o.UID, o.GID); err != nil {
		return v, fmt.Errorf("copy-on-write workspace: %w", err)
	}
	opts = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := v.mount("overlay", o.Target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return v, fmt.Errorf("copy-on-write workspace: overlay: %w", err)
	}
	return v, nil
}

// bindMapped binds src read-only at dst, with the files of o.FromUID and
// o.FromGID shown as o.UID and o.GID's.
func (v *View) bindMapped(src, dst string, o Options) error {
	ns, err := userNS(idMap{o.FromUID, o.UID, o.FromGID, o.GID})
	if err != nil {
		return err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer func() { _ = unix.Close(fd) }()
	attr := &unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(ns.Fd()),
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	v.mounts = append(v.mounts, dst)
	return nil
}

func (v *View) mount(source, target, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		return err
	}
	v.mounts = append(v.mounts, target)
	return nil
}

// Upper is the folder holding what the run wrote (overlayfs's upper
// layer).
func (v *View) Upper() string { return filepath.Join(v.scratch, upperDir) }

// Close unmounts the view (lazily: a process still inside keeps its own
// reference until it goes) and removes Scratch. Target is left as it was
// before Mount. Close is safe to call again.
func (v *View) Close() error {
	var errs []error
	for i := len(v.mounts) - 1; i >= 0; i-- {
		if err := unix.Unmount(v.mounts[i], unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", v.mounts[i], err))
		}
	}
	v.mounts = nil
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Never recursive: with everything unmounted these are empty, and
	// a folder that is not must not lose its files.
	for _, d := range []string{UpDir, LowerDir, ""} {
		if err := os.Remove(filepath.Join(v.scratch, d)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
