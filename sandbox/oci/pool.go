package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// warmPool keeps containers created and started ahead of their runs, with
// sandbox-init waiting on stdin for its job, so that a run skips the
// bundle, the runtime's create and start. The counting, waiting and idle
// timers are warm.Pool's; this file says what a container's key is, how
// one starts, how a run claims it and how it goes. A warm container is the
// container a cold run of the same configuration gets, but for its run id.
// Each serves exactly one run and is removed after it like any other;
// idle ones are removed after maxIdle and by Close, and their owner
// annotations let Reap find them when the process dies.
type warmPool struct {
	*warm.Pool[*warmBox]
	r *Runner
}

// warmBox is a started container waiting for its job.
type warmBox struct {
	runID   string
	created time.Time
	b       *bundle
	c       *container // nil when the start failed
}

func newWarmPool(r *Runner, sizer *warm.Sizer, maxIdle time.Duration) *warmPool {
	if sizer == nil {
		return nil
	}
	p := &warmPool{r: r}
	p.Pool = warm.NewPool(warm.PoolConfig[*warmBox]{
		Sizer: sizer, MaxIdle: maxIdle, Discard: p.discard,
		Age: func(w *warmBox) time.Duration { return time.Since(w.created) },
	})
	return p
}

// template is what a run's container is made of, never the run's command,
// input or variables: nothing of one request reaches a container that
// serves another. Runs with a writable workspace or an egress proxy (both
// the run's own) are not pooled: ok is false.
func template(spec *sandbox.Spec) (tmpl sandbox.Spec, ok bool) {
	if spec.WorkspaceWritable || spec.EgressSocket != "" {
		return tmpl, false
	}
	tmpl = sandbox.Spec{Skill: spec.Skill, SkillVersion: spec.SkillVersion, SkillDir: spec.SkillDir,
		Workspace: spec.Workspace, Image: spec.Image, Limits: spec.Limits}
	// The interpreter its prelude may start ahead (sandbox.Prelude).
	if len(spec.Argv) > 0 {
		tmpl.Argv = []string{spec.Argv[0]}
	}
	return tmpl, true
}

// key names the configuration of spec's container: its config.json but
// for the run's own values, and its image. Empty: not pooled.
func (p *warmPool) key(spec *sandbox.Spec) string {
	if p == nil {
		return ""
	}
	tmpl, ok := template(spec)
	if !ok {
		return ""
	}
	params := p.r.params(&tmpl)
	params.created, params.cgroup = time.Time{}, ""
	cfg := bundleConfig(&tmpl, params)
	cfg.Annotations = nil
	b, err := json.Marshal(struct {
		Image  string
		Config any
	}{spec.Image, cfg})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// take returns a warm container of key that still waits, or nil.
func (p *warmPool) take(ctx context.Context, key string) *warmBox {
	if p == nil {
		return nil
	}
	return p.Take(ctx, key, func(_ context.Context, w *warmBox) error {
		if w.c == nil || !w.c.running() {
			p.r.log.Warn("warm sandbox container ended while it waited", "container_id", w.b.id)
			return errors.New("warm container ended")
		}
		return nil
	})
}

// refill tops the pool up for spec's configuration.
func (p *warmPool) refill(spec *sandbox.Spec, key string) {
	if p == nil || key == "" {
		return
	}
	tmpl, _ := template(spec)
	p.Refill(key, func(ctx context.Context) (*warmBox, error) {
		return p.start(ctx, tmpl)
	})
}

func (p *warmPool) start(ctx context.Context, tmpl sandbox.Spec) (*warmBox, error) {
	id, err := sandbox.NewRunID()
	if err != nil {
		return nil, err
	}
	tmpl.RunID = id
	image, _, err := p.r.images.rootfs(tmpl.Image)
	if err != nil {
		return nil, err
	}
	w := &warmBox{runID: id, created: time.Now(),
		b: &bundle{id: containerID(id), dir: filepath.Join(p.r.bundles, containerID(id))}}
	w.c, err = p.r.create(ctx, w.b, &tmpl, image)
	if err == nil {
		// sandbox-init reads the prelude at once and starts the
		// interpreter, so the next run pays no interpreter start.
		if prelude, ok := sandbox.Prelude(&tmpl, p.r.version); ok {
			if _, werr := w.c.stdin.Write(prelude); werr != nil {
				err = fmt.Errorf("send the prelude to a warm sandbox: %w", werr)
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		p.r.log.Warn("start warm sandbox container", "error", err)
	}
	return w, err
}

// discard removes a container no run uses.
func (p *warmPool) discard(w *warmBox) {
	ctx := context.Background()
	if w.c != nil {
		_ = p.r.runtimeCall(ctx, "kill", w.b.id, "KILL")
		_ = w.c.stdin.Close()
		_ = w.c.wait()
	}
	if err := p.r.remove(ctx, w.b, true); err != nil {
		p.r.log.Warn("remove warm sandbox container", "container_id", w.b.id, "error", err)
	}
}

func (p *warmPool) counts(key string, hit bool) {
	if p != nil {
		p.Count(key, hit)
	}
}

func (p *warmPool) close() {
	if p != nil {
		p.Close()
	}
}

// PoolStats reports on the warm pool.
func (r *Runner) PoolStats() sandbox.PoolStats {
	if r.pool == nil {
		return sandbox.PoolStats{}
	}
	s := r.pool.Stats()
	return sandbox.PoolStats{Size: s.Size, Ready: s.Ready, Hits: s.Hits, Misses: s.Misses}
}
