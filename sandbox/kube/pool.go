package kube

import (
	"context"
	"io"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// warmPool keeps Pods created ahead of their runs: scheduled, started, and
// attached, with sandbox-init waiting on stdin for its job, so that a run
// skips the Pod's creation, start and attach. The counting, waiting and
// idle timers are warm.Pool's; this file and warm.go say what a Pod's key
// is, how one starts, how a run claims it and how it goes. A warm Pod is
// the Pod a cold run of the same configuration gets (podKey), but for its
// name, its run id and an activeDeadlineSeconds longer by the time it may
// wait; the run that takes it patches its own run id in and cuts the
// deadline back (claim). Each warm Pod serves exactly one run and is
// deleted after it like any other. Idle Pods are deleted after maxIdle and
// by Close; their owner labels let Reap find them when the process dies.
type warmPool struct {
	*warm.Pool[*warmPod]
	k       *Kube
	maxIdle time.Duration
}

// warmPod is a started Pod and its open attach.
type warmPod struct {
	name    string
	created time.Time // before the create call, so its age is never underestimated
	imageID string
	sess    *attachment // nil when the start failed
}

func newWarmPool(k *Kube, sizer *warm.Sizer, maxIdle time.Duration) *warmPool {
	if sizer == nil {
		return nil
	}
	p := &warmPool{k: k, maxIdle: maxIdle}
	p.Pool = warm.NewPool(warm.PoolConfig[*warmPod]{
		Sizer: sizer, MaxIdle: maxIdle, Discard: p.discard,
		// A Pod's idle time counts from its creation: its deadline does.
		Age: func(w *warmPod) time.Duration { return time.Since(w.created) },
	})
	return p
}

// key is the configuration a run's Pod has (podKey); empty when the pool
// is off or the run cannot share a Pod.
func (p *warmPool) key(spec *sandbox.Spec) string {
	if p == nil {
		return ""
	}
	return p.k.podKey(spec)
}

// take returns a warm Pod of key claimed for spec, or nil: none idle, none
// starting for it, or ctx ended while it waited for one.
func (p *warmPool) take(ctx context.Context, key string, spec *sandbox.Spec) *warmPod {
	if p == nil {
		return nil
	}
	return p.Take(ctx, key, func(ctx context.Context, w *warmPod) error {
		err := p.claim(ctx, w, spec)
		if err != nil {
			p.k.log.Warn("warm sandbox pod unusable", "pod", w.name, "error", err)
		}
		return err
	})
}

// refill tops the pool up for spec's configuration (warm.Pool.Refill).
// Runs call it once they have their Result.
func (p *warmPool) refill(spec *sandbox.Spec, key string) {
	if p == nil || key == "" {
		return
	}
	// What the Pod is made of, never the run's command, input or
	// variables: nothing of one request reaches a Pod that serves another.
	tmpl := sandbox.Spec{
		Skill: spec.Skill, SkillVersion: spec.SkillVersion, SkillDir: spec.SkillDir, Workspace: spec.Workspace,
		WorkspaceWritable: spec.WorkspaceWritable, Image: spec.Image, Limits: spec.Limits,
		// Which Pod an egress run gets depends on whether its proxy
		// ends TLS (a folder for its trust bundle), not on the proxy:
		// that is the run's own, reached over its attach.
		EgressCA: spec.EgressCA,
	}
	// The interpreter its prelude may start ahead (sandbox.Prelude), as
	// a warm container's does.
	if len(spec.Argv) > 0 {
		tmpl.Argv = []string{spec.Argv[0]}
	}
	if p.k.podKey(&tmpl) != key {
		// podFor reads a Spec field the template lacks: a warm Pod would
		// differ from the run's, so there is none.
		p.k.log.Error("warm sandbox pod would differ from a cold one; not pooling", "skill", spec.Skill)
		return
	}
	p.Refill(key, func(ctx context.Context) (*warmPod, error) {
		w, err := p.start(ctx, tmpl)
		if err != nil && ctx.Err() == nil {
			p.k.log.Warn("start warm sandbox pod", "error", err)
		}
		return w, err
	})
}

// discard deletes a Pod that no run uses; the pool calls it in the
// background.
func (p *warmPool) discard(w *warmPod) {
	if w.sess != nil {
		// sandbox-init answers the stop with a report of its own,
		// which no run reads.
		go func() { _, _ = io.Copy(io.Discard, w.sess.frames) }()
	}
	// It never ran a job: nothing to wait for.
	if err := p.k.deletePod(context.Background(), w.name, 0); err != nil {
		p.k.log.Warn("delete warm sandbox pod", "pod", w.name, "error", err)
	}
	if w.sess != nil {
		w.sess.await(p.k.callTimeout)
	}
}

// close deletes the idle Pods and those starting, tells waiting runs to
// start their own, and returns once every deletion has been made.
func (p *warmPool) close() {
	if p != nil {
		p.Close()
	}
}

// counts records whether a run that could use the pool got a Pod.
func (p *warmPool) counts(key string, hit bool) {
	if p != nil {
		p.Count(key, hit)
	}
}

// PoolStats returns the warm pool's figures; all zero when it is off.
func (k *Kube) PoolStats() sandbox.PoolStats {
	if k.pool == nil {
		return sandbox.PoolStats{}
	}
	s := k.pool.Stats()
	return sandbox.PoolStats{Size: s.Size, Ready: s.Ready, Hits: s.Hits, Misses: s.Misses}
}
