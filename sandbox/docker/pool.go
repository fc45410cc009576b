package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/docker/docker/pkg/stringid"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// warmPool keeps containers that are created, attached and started, with
// sandbox-init waiting for its job, so that a run skips the engine's
// slowest steps. The counting, waiting and idle timers are warm.Pool's;
// this file says what a container's key is, how one starts and how it goes.
// A warm container serves one run only, and only a run whose container
// configuration (image, user, mounts, limits, labels except the run's own)
// is identical; it is removed afterwards like any other. Idle containers
// are removed after maxIdle and when the runner closes; their owner labels
// let Reap find them if the process dies.
type warmPool struct {
	*warm.Pool[*box]
	d        *Runner
	prestart bool // warm containers may start python3 ahead of the job
}

func newWarmPool(d *Runner, sizer *warm.Sizer, maxIdle time.Duration, prestart bool) *warmPool {
	if sizer == nil {
		return nil
	}
	p := &warmPool{d: d, prestart: prestart}
	p.Pool = warm.NewPool(warm.PoolConfig[*box]{
		Sizer: sizer, MaxIdle: maxIdle, Discard: p.discard,
		// Starts and removals count with the runner's other background
		// work, which Close waits for within its context.
		Go: d.bg.Go,
	})
	return p
}

// key identifies a container configuration: runs with equal keys can use
// each other's warm containers. Empty when the pool is off.
func (p *warmPool) key(spec *sandbox.Spec, usr usrMount, view bool) string {
	if p == nil || spec.EgressSocket != "" {
		// The socket is the run's own: no other run can use the container.
		return ""
	}
	tmpl := *spec
	tmpl.RunID = ""
	params := p.d.runParams(&tmpl, time.Time{}, usr)
	var writeCap int64
	if holdsWorkspace(spec) {
		// A writable workspace is a volume of the run's own, filled after
		// the start: which folder fills it is not the container's
		// configuration, the volume's size is.
		tmpl.Workspace = "held"
		if view {
			// A view's room is set when it is mounted, for the run.
			params.workspaceSlot = "held"
		} else {
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

var errWarmDied = errors.New("warm sandbox died while idle")

// take returns a live warm container for key, or nil (warm.Pool.Take).
func (p *warmPool) take(ctx context.Context, key string) *box {
	if p == nil {
		return nil
	}
	return p.Take(ctx, key, func(_ context.Context, b *box) error {
		if !b.s.alive() {
			p.d.log.Warn(errWarmDied.Error(), "container_id", stringid.TruncateID(b.id))
			return errWarmDied
		}
		b.warm = true
		return nil
	})
}

// refill tops the pool up for spec's configuration (warm.Pool.Refill).
func (p *warmPool) refill(spec *sandbox.Spec, key string, usr usrMount, view bool) {
	if p == nil {
		return
	}
	// What the container's configuration is made of, and what its
	// prelude may use: never the run's arguments or caller variables.
	tmpl := sandbox.Spec{
		Skill: spec.Skill, SkillVersion: spec.SkillVersion, SkillDir: spec.SkillDir, Workspace: spec.Workspace,
		WorkspaceWritable: spec.WorkspaceWritable, Image: spec.Image, Limits: spec.Limits,
	}
	if p.prestart && len(spec.Argv) > 0 {
		tmpl.Argv = []string{spec.Argv[0]}
	}
	p.Refill(key, func(context.Context) (*box, error) {
		t := tmpl
		b, err := p.start(&t, usr, view)
		if err != nil {
			if usr.volume != "" {
				p.d.forgetUsr(usr.imageID)
			}
			p.d.log.Warn("start warm sandbox", "error", err)
		}
		return b, err
	})
}

// counts records whether a run that could use the pool got a container.
func (p *warmPool) counts(key string, hit bool) {
	if p != nil {
		p.Count(key, hit)
	}
}

// start creates, attaches and starts a container for tmpl. Starts run
// under a context of their own: the runner's Close waits for them.
func (p *warmPool) start(tmpl *sandbox.Spec, usr usrMount, view bool) (*box, error) {
	id, err := sandbox.NewRunID()
	if err != nil {
		return nil, err
	}
	tmpl.RunID = id
	ctx := context.Background()
	var vol *workspaceVolume
	if holdsWorkspace(tmpl) {
		if vol, err = p.d.newWorkspaceVolume(ctx, id, wsPlan{view: view, size: tmpl.Limits.WorkspaceWriteBytes}); err != nil {
			return nil, err
		}
	}
	b, err := p.d.startContainer(ctx, tmpl, vol, usr)
	if b != nil {
		b.vol = vol
	} else if err := p.d.removeWorkspaceVolume(ctx, vol); err != nil {
		p.d.log.Warn("remove warm workspace volume", "volume", vol.name, "error", err)
	}
	if err != nil {
		return b, err
	}
	if b.imageID == "" {
		b.imageID = p.d.imageOf(ctx, b.id, p.d.log)
	}
	if msg, ok := sandbox.Prelude(tmpl, p.d.version); ok {
		err = b.s.sendPrelude(msg)
	}
	return b, err
}

// discard removes a container no run will use; the pool calls it in the
// background.
func (p *warmPool) discard(b *box) {
	if b.s != nil {
		b.s.close()
	}
	if err := p.d.remove(context.Background(), b.ref); err != nil {
		p.d.log.Warn("remove warm sandbox", "container_id", b.ref, "error", err)
	}
	if err := p.d.removeWorkspaceVolume(context.Background(), b.vol); err != nil {
		p.d.log.Warn("remove warm workspace volume", "volume", b.vol.name, "error", err)
	}
}

// holdsWorkspace reports whether spec's run has a writable workspace, which the
// runner fills into a volume and hands back (wsvolume.go).
func holdsWorkspace(spec *sandbox.Spec) bool { return spec.Workspace != "" && spec.WorkspaceWritable }

// close removes every idle container; the runner then waits for the
// background work.
func (p *warmPool) close() {
	if p != nil {
		p.Close()
	}
}
