package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// driver is the Docker backend as the engine drives it: a Spec becomes a
// container configuration (config.go), and its sandbox a container that
// is created, attached and started, with sandbox-init waiting for its job.
type driver struct{ d *Runner }

var _ engine.Driver = driver{}

func (driver) Name() string { return "docker" }

// Capacity is the engine's host, as the engine reports it, and the engine
// runtime this runner asks for.
func (dr driver) Capacity(ctx context.Context) (sandbox.HostCapacity, error) {
	f, err := dr.d.engine.get(ctx, dr.d)
	if err != nil {
		return sandbox.HostCapacity{}, err
	}
	return sandbox.HostCapacity{CPUs: f.cpus, MemoryBytes: f.memory, Runtimes: f.runtimes, Runtime: dr.d.ociRuntime}, nil
}

// Check has nothing to add: the engine refuses what it cannot run at
// create, in words createError passes on.
func (driver) Check(context.Context, *sandbox.Spec) error { return nil }

// plan is what a run's container is made with besides its Spec.
type plan struct {
	usr usrMount // the image's usr volume, when it has one
	ws  wsPlan   // how a writable workspace is shared
}

// Plan finds the image's usr volume and, for a writable workspace, chooses
// between a view and a copy (planWorkspace), then keys the container
// configuration they make.
func (dr driver) Plan(ctx context.Context, tmpl *sandbox.Spec) (engine.Plan, error) {
	p := &plan{usr: dr.d.usrFor(ctx, tmpl.Image)}
	if holdsWorkspace(tmpl) {
		var err error
		if p.ws, err = dr.d.planWorkspace(tmpl); err != nil {
			return engine.Plan{}, err
		}
	}
	return engine.Plan{Key: dr.d.key(tmpl, p), Data: p}, nil
}

// key identifies a container configuration: runs with equal keys can use
// each other's warm containers. The configuration is config.go's but for
// the run's own labels (an egress proxy's socket is the engine's slot's,
// named alike for every run).
func (d *Runner) key(spec *sandbox.Spec, p *plan) string {
	tmpl := *spec
	tmpl.RunID = ""
	params := d.runParams(&tmpl, time.Time{}, p.usr)
	var writeCap int64
	if holdsWorkspace(spec) {
		// A writable workspace is a volume of the run's own, filled after
		// the start: which folder fills it is not the container's
		// configuration, the volume's size is.
		tmpl.Workspace = "held"
		switch {
		case p.ws.view:
			// A view's room is set when it is mounted, for the run.
			params.workspaceSlot = "held"
		case p.ws.size != spec.Limits.WorkspaceWriteBytes:
			return "" // a warm container's volume has the cap's size
		default:
			params.workspaceVolume = "held"
			writeCap = spec.Limits.WorkspaceWriteBytes
		}
	}
	cfg, hc := containerConfig(&tmpl, params)
	b, err := json.Marshal([]any{cfg, hc, writeCap})
	if err != nil {
		return "" // cannot happen for these types; no key, no pooling
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Start makes the run's workspace volume (or a view's slot) and its
// container, attaches and starts it. A create whose caller has left
// (engine.Left) is removed without being started.
func (dr driver) Start(ctx context.Context, tmpl *sandbox.Spec, ep engine.Plan) (engine.Box, error) {
	d := dr.d
	p, ok := ep.Data.(*plan)
	if !ok {
		return nil, fmt.Errorf("start a docker sandbox: a plan of another driver (%T)", ep.Data)
	}
	var vol *workspaceVolume
	if holdsWorkspace(tmpl) {
		var err error
		if vol, err = d.newWorkspaceVolume(ctx, tmpl.RunID, p.ws); err != nil {
			return nil, err
		}
	}
	b, err := d.startContainer(ctx, tmpl, vol, p.usr)
	if err != nil && p.usr.volume != "" {
		d.forgetUsr(p.usr.imageID)
	}
	return b, err
}

// startContainer creates, attaches to and starts a container for spec; the
// container waits for its job. The box it returns names what to remove,
// also on error: the container, and vol.
func (d *Runner) startContainer(ctx context.Context, spec *sandbox.Spec, vol *workspaceVolume, usr usrMount) (*box, error) {
	b := &box{d: d, runID: spec.RunID, imageID: usr.imageID, vol: vol}
	params := d.runParams(spec, d.now(), usr)
	if vol != nil {
		params.workspaceVolume, params.workspaceSlot = vol.name, vol.slot
	}
	hosts, err := d.hosts.ensure()
	if err != nil {
		return b, err
	}
	params.hostsFile = hosts
	cfg, hc := containerConfig(spec, params)
	name := containerName(spec.RunID)
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	sctx, sp := telemetry.Start(cctx, "container.create")
	created, err := d.client.ContainerCreate(sctx, cfg, hc, nil, nil, name)
	endSpan(sp, err)
	cancel()
	// A create cut short (its timeout) may still have made the container:
	// it is then removed by name, as its id never arrived.
	b.id, b.ref = created.ID, created.ID
	if b.ref == "" {
		b.ref = name
	}
	if err != nil {
		return b, createError(spec.Image, err)
	}
	if err := engine.Left(ctx); err != nil {
		return b, fmt.Errorf("run cancelled: %w", err)
	}
	b.s, err = d.attachAndStart(ctx, created.ID)
	return b, err
}

func (d *Runner) runParams(spec *sandbox.Spec, created time.Time, usr usrMount) runParams {
	return runParams{image: spec.Image, user: d.ids.User(), created: created, owner: d.owner, version: d.version, ociRuntime: d.ociRuntime, usr: usr}
}

// holdsWorkspace reports whether spec's run has a writable workspace,
// which the runner shares as a view or a volume (wsview.go, wsvolume.go).
func holdsWorkspace(spec *sandbox.Spec) bool { return spec.Workspace != "" && spec.WorkspaceWritable }

// createError names what a failed create means for the user.
func createError(image string, err error) error {
	switch {
	case cerrdefs.IsNotFound(err):
		return imageNotFound(image, err)
	case cerrdefs.IsInvalidArgument(err):
		return fmt.Errorf("%w: the engine refused the container configuration: %w", sandbox.ErrInvalidSpec, err)
	}
	return apiError("create sandbox container", err)
}
