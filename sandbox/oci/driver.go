package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// driver is the oci backend as the engine drives it: a Spec becomes a
// runtime bundle, and its sandbox one `runtime run` in the foreground.
type driver struct{ r *Runner }

var _ engine.Driver = driver{}

func (driver) Name() string { return "oci" }

// Capacity is this machine's: the runtime starts sandboxes here.
func (driver) Capacity(context.Context) (sandbox.HostCapacity, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return sandbox.HostCapacity{}, fmt.Errorf("read this host's memory: %w", err)
	}
	return sandbox.HostCapacity{CPUs: runtime.NumCPU(), MemoryBytes: int64(si.Totalram) * int64(si.Unit)}, nil //nolint:gosec // memory sizes fit
}

// Check refuses what a runtime-spec bundle here cannot give, and an image
// not unpacked.
func (d driver) Check(_ context.Context, spec *sandbox.Spec) error {
	if spec.Limits.Network {
		return fmt.Errorf("%w: the oci backend gives a sandbox no network but loopback: grant an egress allowlist instead, or use the docker backend for a full network", sandbox.ErrInvalidSpec)
	}
	_, _, err := d.r.images.rootfs(spec.Image)
	return err
}

// Plan keys tmpl's sandbox (key); the oci backend decides nothing else
// ahead.
func (d driver) Plan(_ context.Context, tmpl *sandbox.Spec) (engine.Plan, error) {
	return engine.Plan{Key: d.key(tmpl)}, nil
}

// key names tmpl's config.json but for the run's own values, and its
// image. A writable workspace is a slot the run's view is mounted on, so
// which folder it shows is no part of the key; nor is an egress proxy's
// socket, the engine's slot's.
func (d driver) key(tmpl *sandbox.Spec) string {
	t := *tmpl
	params := d.r.params(&t)
	params.created, params.cgroup = time.Time{}, ""
	if t.WorkspaceWritable {
		t.Workspace, params.workspace = "", "slot"
	}
	cfg := bundleConfig(&t, params)
	cfg.Annotations = nil
	b, err := json.Marshal(struct {
		Image  string
		Config any
	}{t.Image, cfg})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Start writes tmpl's bundle and starts its container, which waits for its
// job. The box it returns names what to remove, also on error.
func (d driver) Start(_ context.Context, tmpl *sandbox.Spec, _ engine.Plan) (engine.Box, error) {
	r := d.r
	image, imageID, err := r.images.rootfs(tmpl.Image)
	if err != nil {
		return nil, err
	}
	id := containerID(tmpl.RunID)
	b := &box{r: r, runID: tmpl.RunID, imageID: imageID, exit: -1,
		b: &bundle{id: id, dir: filepath.Join(r.bundles, id)}}
	if err := os.Mkdir(b.b.dir, 0o700); err != nil {
		return b, fmt.Errorf("create bundle: %w", err)
	}
	params := r.params(tmpl)
	b.cgroupPath = params.cgroup
	if tmpl.WorkspaceWritable {
		if params.workspace, err = b.b.prepareSlot(); err != nil {
			return b, err
		}
	}
	if err := b.b.prepare(bundleConfig(tmpl, params), image); err != nil {
		return b, err
	}
	b.c, err = r.start(b.b)
	return b, err
}

func (r *Runner) params(spec *sandbox.Spec) bundleParams {
	return bundleParams{
		uid: sandbox.SandboxUID, gid: sandbox.SandboxGID,
		created:   r.now(),
		owner:     r.owner,
		version:   r.version,
		cgroup:    cgroupParent + "/" + spec.RunID,
		hostsFile: r.hostsFile,
		seccomp:   r.seccomp,
	}
}

// cgroupParent holds every run's cgroup, in each hierarchy.
const cgroupParent = "/sandboxrun"
