package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox/cow"
)

// A bundle is one run's folder under bundles/: config.json; points/, the
// folders and files the run's mounts go over; rootfs/, where a read-only
// overlay of points/ on the image's root file system is mounted. The
// image's own folder is never written: the runtime creates a missing mount
// point in the root file system, so every one is made in points/ first.
const (
	configFile = "config.json"
	pointsDir  = "points"
	rootfsDir  = "rootfs"
)

// containerPrefix starts every container's id, as on the Docker backend.
const containerPrefix = "sandboxrun-"

func containerID(runID string) string { return containerPrefix + runID }

type bundle struct {
	id, dir string
	mounts  []string  // what is mounted in the bundle, in mount order
	view    *cow.View // a writable workspace's, mounted before the others
}

// mount mounts and records the mount, for remove.
func (b *bundle) mount(source, target, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		return err
	}
	b.mounts = append(b.mounts, target)
	return nil
}

// prepare writes the bundle of cfg on the image's root file system.
func (b *bundle) prepare(cfg *specs.Spec, image string) error {
	points := filepath.Join(b.dir, pointsDir)
	dirs, files := mountPoints(cfg)
	img, err := os.OpenRoot(image)
	if err != nil {
		return fmt.Errorf("open the image's root file system: %w", err)
	}
	defer func() { _ = img.Close() }()
	for _, d := range append(dirs, cfg.Process.Cwd) {
		p := filepath.Join(points, d)
		if err := os.MkdirAll(p, 0o755); err != nil { //nolint:gosec // mount points the sandbox user walks through
			return fmt.Errorf("bundle mount point %s: %w", d, err)
		}
		if err := sameAsImage(img, d, p); err != nil {
			return fmt.Errorf("bundle mount point %s: %w", d, err)
		}
	}
	for _, f := range files {
		p := filepath.Join(points, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil { //nolint:gosec // as above
			return fmt.Errorf("bundle mount point %s: %w", f, err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil { //nolint:gosec // as above
			return fmt.Errorf("bundle mount point %s: %w", f, err)
		}
	}
	rootfs := filepath.Join(b.dir, rootfsDir)
	if err := os.Mkdir(rootfs, 0o755); err != nil { //nolint:gosec // the sandbox's /
		return fmt.Errorf("create bundle: %w", err)
	}
	// No upper layer: the overlay is read-only by construction.
	opts := "lowerdir=" + points + ":" + image
	if err := b.mount("overlay", rootfs, "overlay", unix.MS_RDONLY, opts); err != nil {
		return fmt.Errorf("mount the sandbox's root file system: %w", err)
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode config.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, configFile), data, 0o600); err != nil {
		return fmt.Errorf("write config.json: %w", err)
	}
	return nil
}

// sameAsImage gives the mount point p the mode and owner of the folder d
// of the image, when it has one: the folder in points/ hides the image's,
// and the runtime gives a tmpfs the mode of the folder it mounts over
// (/tmp stays 1777).
func sameAsImage(img *os.Root, d, p string) error {
	fi, err := img.Lstat(strings.TrimPrefix(d, "/"))
	if err != nil || !fi.IsDir() {
		return nil //nolint:nilerr // not in the image: the mount point's own mode stands
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := os.Lchown(p, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	return os.Chmod(p, fi.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid|fs.ModeSetuid))
}

// remove deletes the container, whatever its state, when deleteIt, then
// the bundle. A container or bundle already gone is not an error.
func (r *Runner) remove(ctx context.Context, b *bundle, deleteIt bool) error {
	var errs []error
	if deleteIt {
		errs = append(errs, r.runtimeCall(ctx, "delete", "--force", b.id))
	}
	unmounted := true
	// The view first: it is mounted on the slot, one of b.mounts.
	if b.view != nil {
		if err := b.view.Close(); err != nil {
			errs = append(errs, err)
			unmounted = false
		}
	}
	// A bundle found by the reaper has no record of its mounts: every
	// place one may be is tried, the slot twice (the view on its bind).
	targets := b.mounts
	if targets == nil && b.view == nil {
		slot := filepath.Join(b.dir, wsMerged)
		targets = []string{filepath.Join(b.dir, rootfsDir), slot, slot,
			filepath.Join(b.dir, wsDir, cow.LowerDir), filepath.Join(b.dir, wsDir, cow.UpDir)}
	}
	for i := len(targets) - 1; i >= 0; i-- {
		err := unix.Unmount(targets[i], unix.MNT_DETACH)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", targets[i], err))
			unmounted = false
		}
	}
	// Never remove through a mount that is still there.
	if unmounted {
		if err := os.RemoveAll(b.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove bundle: %w", err))
		}
	}
	return errors.Join(errs...)
}

// runtimeCall runs one short runtime command (kill, delete) under its own
// timeout, also when ctx has ended. A container that no longer exists or no
// longer runs is not an error.
func (r *Runner) runtimeCall(ctx context.Context, args ...string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.callTimeout)
	defer cancel()
	full := append([]string{"--root", r.runRoot}, args...)
	out, err := exec.CommandContext(cctx, r.runtime, full...).CombinedOutput()
	if err == nil || gone(string(out)) {
		return nil
	}
	return fmt.Errorf("%s %s: %w: %s", r.runtimeName, args[0], err, strings.TrimSpace(firstLine(out)))
}

// gone recognises the runtimes' answer about a container that does not
// exist or has stopped.
func gone(out string) bool {
	out = strings.ToLower(out)
	return strings.Contains(out, "does not exist") || strings.Contains(out, "not running") ||
		strings.Contains(out, "not found") || strings.Contains(out, "container not started")
}
