package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/cow"
)

// A writable workspace is, where it can be, a copy-on-write view (package
// cow) rather than a copy: the run's container binds an empty folder of
// the host, a slot, at /workspace with rslave propagation, and when the run
// takes the container the runner mounts the view on the slot. The mount
// propagates into the container, which sees the session's files at once,
// whatever their size; its writes land on a tmpfs of the room left, and
// afterwards that tmpfs is the change list. Warm containers work as
// before: a slot is empty until its run comes.
//
// Views need what mounting needs: root in the engine's mount namespace
// (sandboxrun and dockerd on one host, not sandboxrun in a container of
// its own) and a kernel with id-mapped mounts under overlayfs. Without
// them the runner copies the workspace in and out (wsvolume.go), and says
// so once in its log. sandbox-init checks that /workspace is the view
// before it starts the script (frame.Job.HoldView), so a view that did not
// reach the container fails that run and turns views off, never runs a
// script on an empty folder.

// DefaultViewDir is where a runner keeps its views' slots and scratch
// folders, one folder per runner.
const DefaultViewDir = "/run/sandboxrun/views"

// viewDir is a runner's folder of views: slots/ (a shared mount, so that
// mounts on its folders reach the containers binding them) and scratch/.
type viewDir struct {
	base string
	log  *slog.Logger
	once sync.Once
	dir  string
	err  error
	off  atomic.Bool
}

func newViewDir(base string, log *slog.Logger) *viewDir {
	v := &viewDir{base: base, log: log}
	if base == "" {
		v.off.Store(true)
	}
	return v
}

// ready sets the folder up on first use and says whether views are on.
func (v *viewDir) ready() bool {
	if v == nil || v.off.Load() {
		return false
	}
	v.once.Do(func() {
		v.dir, v.err = setUpViewDir(v.base)
		if v.err != nil {
			v.disable("set up the folder of workspace views", v.err)
		}
	})
	return v.err == nil && !v.off.Load()
}

// disable turns views off for the runner's life: workspaces are copied.
func (v *viewDir) disable(doing string, err error) {
	if v.off.CompareAndSwap(false, true) {
		v.log.Warn("copy-on-write workspaces are off; writable workspaces are copied in and out",
			"failed_to", doing, "error", err)
	}
}

func (v *viewDir) slot(runID string) string    { return filepath.Join(v.dir, "slots", runID) }
func (v *viewDir) scratch(runID string) string { return filepath.Join(v.dir, "scratch", runID) }

// setUpViewDir makes base/<pid>-<start>-<random>/{slots,scratch} and binds
// slots onto itself as a shared mount. The name lets a reaper tell the
// folders of a dead runner (reapViewDirs).
func setUpViewDir(base string) (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("mounting a view needs root")
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	self := sandbox.OwnerOf(os.Getpid(), "")
	dir := filepath.Join(base, fmt.Sprintf("%d-%d-%s", self.PID, self.Start, hex.EncodeToString(r[:])))
	slots := filepath.Join(dir, "slots")
	for _, d := range []string{slots, filepath.Join(dir, "scratch")} {
		if err := os.MkdirAll(d, 0o755); err != nil { //nolint:gosec // the engine binds slots for the sandbox user
			return "", err
		}
	}
	if err := unix.Mount(slots, slots, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind %s: %w", slots, err)
	}
	if err := unix.Mount("", slots, "", unix.MS_SHARED, ""); err != nil {
		_ = unix.Unmount(slots, unix.MNT_DETACH)
		return "", fmt.Errorf("share %s: %w", slots, err)
	}
	return dir, nil
}

// close removes the runner's folder once its runs are done.
func (v *viewDir) close() {
	if v == nil || v.dir == "" {
		return
	}
	if err := removeViewDir(v.dir); err != nil {
		v.log.Warn("remove the folder of workspace views", "dir", v.dir, "error", err)
	}
}

// removeViewDir unmounts everything under dir (deepest first) and removes
// it, never through a mount that is still there.
func removeViewDir(dir string) error {
	// Last mounted first: a mount over another comes after it in the table.
	points, err := mountinfo.GetMounts(mountinfo.PrefixFilter(filepath.Clean(dir)))
	if err != nil {
		return err
	}
	var errs []error
	for i := len(points) - 1; i >= 0; i-- {
		p := points[i].Mountpoint
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.RemoveAll(dir)
}

// reapViewDirs removes the view folders under base of runners that are
// gone (their process, by pid and start time).
func reapViewDirs(base string) error {
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		parts := strings.SplitN(e.Name(), "-", 3)
		if len(parts) != 3 {
			continue
		}
		pid, perr := strconv.Atoi(parts[0])
		start, serr := strconv.ParseUint(parts[1], 10, 64)
		if perr != nil || serr != nil || sandbox.ProcessAlive(pid, start) {
			continue
		}
		errs = append(errs, removeViewDir(filepath.Join(base, e.Name())))
	}
	return errors.Join(errs...)
}

// errNoView: a view could not be mounted for a run, before its job was
// sent; the run is tried again with its workspace copied.
var errNoView = errors.New("copy-on-write workspace unavailable")

// newSlot makes the empty folder a run's container binds at /workspace.
func (d *Runner) newSlot(runID string) (*workspaceVolume, error) {
	slot := d.views.slot(runID)
	if err := os.Mkdir(slot, 0o755); err != nil { //nolint:gosec // bound for the sandbox user, empty until the view is mounted
		return nil, fmt.Errorf("%w: %w", sandbox.ErrWorkspace, err)
	}
	return &workspaceVolume{slot: slot, scratch: d.views.scratch(runID)}, nil
}

// wsPlan is how a run's writable workspace is shared with its container.
type wsPlan struct {
	view  bool                   // a copy-on-write view; else a copy
	facts sandbox.WorkspaceFacts // a view's
	size  int64                  // a copy's volume size
}

// planWorkspace takes spec's workspace facts (measured once, unless its
// owner vouched for them) and chooses: a view when
// views are on and one owner has every file (then the view shows what a
// copy would), else a copy.
func (d *Runner) planWorkspace(spec *sandbox.Spec) (wsPlan, error) {
	if d.views.ready() {
		f, err := sandbox.FactsOf(spec)
		if err != nil {
			return wsPlan{}, err
		}
		if f.Uniform {
			return wsPlan{view: true, facts: f}, nil
		}
	}
	size, err := sandbox.WorkspaceSize(spec)
	return wsPlan{size: size}, err
}

// mountView mounts spec's workspace on the slot; the container sees it at
// once.
func (d *Runner) mountView(spec *sandbox.Spec, v *workspaceVolume, ws wsPlan) error {
	v.files = ws.facts.Bytes
	var err error
	v.view, err = cow.Mount(cow.Options{
		Lower: spec.Workspace, Scratch: v.scratch, Target: v.slot,
		Room: ws.facts.Room(spec.Limits.WorkspaceWriteBytes),
		UID:  int(d.ids.UID()), GID: int(d.ids.GID()), FromUID: ws.facts.UID, FromGID: ws.facts.GID,
	})
	if err != nil {
		d.views.disable("mount a workspace view", err)
		return fmt.Errorf("%w: %w", errNoView, err)
	}
	return nil
}

// handBackView gives what the run wrote to spec.Changes.
func (v *workspaceVolume) handBackView(ctx context.Context, spec *sandbox.Spec) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := v.view.WriteLayer(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	var err error
	v.changes, err = spec.Changes.ApplyChanges(ctx, pr)
	pr.CloseWithError(errStopped)
	if werr := <-done; werr != nil && err == nil {
		err = fmt.Errorf("%w: read the run's changes: %w", sandbox.ErrWorkspace, werr)
	}
	if err != nil {
		return fmt.Errorf("the run's changes to its workspace were not kept: %w", err)
	}
	return nil
}

// removeSlot unmounts the view and removes the slot; the container must
// be gone.
func (v *workspaceVolume) removeSlot() error {
	var errs []error
	if v.view != nil {
		errs = append(errs, v.view.Close())
	}
	if err := os.Remove(v.slot); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
