package kube

import (
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// warmPool keeps Pods created ahead of their runs: scheduled, started, and
// attached, with sandbox-init waiting on stdin for its job, so that a run
// skips the Pod's creation, start and attach. A warm Pod is the Pod a cold
// run of the same configuration gets (podKey), but for its name, its run
// id and an activeDeadlineSeconds longer by the time it may wait; the run
// that takes it patches its own run id in and cuts the deadline back
// (claim). Each warm Pod serves exactly one run and is deleted after it
// like any other. After each run the pool is topped up to its size for
// that run's configuration; a run that finds none idle waits for one
// already starting rather than create another beside it. Idle Pods are
// deleted after maxIdle and by Close; their owner labels let Reap find them
// when the process dies.
type warmPool struct {
	k       *Kube
	sizer   *warm.Sizer
	maxIdle time.Duration
	// ctx ends with close, so that starts under way give up.
	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup // starts and deletions

	mu     sync.Mutex
	closed bool
	count  int // idle plus starting
	idle   map[string][]*warmPod
	// starting counts the starts under way per key; waiters are the runs
	// waiting for one of them, first come first served.
	starting map[string]int
	waiters  map[string][]chan *warmPod
	// hits and misses count the runs that could use the pool and did or
	// did not get a warm Pod.
	hits, misses atomic.Uint64
}

// warmPod is a started Pod and its open attach.
type warmPod struct {
	name    string
	created time.Time // before the create call, so its age is never underestimated
	imageID string
	sess    *session // nil when the start failed
	timer   *time.Timer
}

func newWarmPool(k *Kube, sizer *warm.Sizer, maxIdle time.Duration) *warmPool {
	if sizer == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &warmPool{k: k, sizer: sizer, maxIdle: maxIdle, ctx: ctx, cancel: cancel,
		idle: map[string][]*warmPod{}, starting: map[string]int{}, waiters: map[string][]chan *warmPod{}}
}

// key is the configuration a run's Pod has (podKey); empty when the pool
// is off or the run cannot share a Pod.
func (p *warmPool) key(spec *sandbox.Spec) string {
	if p == nil || spec.EgressSocket != "" {
		// The socket is the run's own (the Docker pool's rule).
		return ""
	}
	return p.k.podKey(spec)
}

// take returns a warm Pod of key claimed for spec, or nil: none idle, none
// starting for it, or ctx ended while it waited for one.
func (p *warmPool) take(ctx context.Context, key string, spec *sandbox.Spec) *warmPod {
	if p == nil || key == "" {
		return nil
	}
	for {
		w, wait := p.next(key)
		if wait != nil {
			w = p.await(ctx, key, wait)
		}
		if w == nil {
			return nil
		}
		err := p.claim(ctx, w, spec)
		if err == nil {
			return w
		}
		p.k.log.Warn("warm sandbox pod unusable", "pod", w.name, "error", err)
		p.discard(w)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// next pops an idle Pod of key, newest first, or else returns a channel on
// which a Pod starting for key will come, when more are starting than runs
// wait for them.
func (p *warmPool) next(key string) (*warmPod, chan *warmPod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizer.Arrive(key, len(p.idle[key]))
	if list := p.idle[key]; len(list) > 0 {
		w := list[len(list)-1]
		if p.idle[key] = list[:len(list)-1]; len(p.idle[key]) == 0 {
			delete(p.idle, key)
		}
		p.count--
		w.timer.Stop()
		return w, nil
	}
	if p.closed || p.starting[key] <= len(p.waiters[key]) {
		return nil, nil
	}
	ch := make(chan *warmPod, 1)
	p.waiters[key] = append(p.waiters[key], ch)
	return nil, ch
}

// await waits for a Pod on ch. When ctx ends first, a Pod handed over
// meanwhile goes back to the pool.
func (p *warmPool) await(ctx context.Context, key string, ch chan *warmPod) *warmPod {
	select {
	case w := <-ch:
		return w
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.waiters[key], ch); i >= 0 {
		p.waiters[key] = slices.Delete(p.waiters[key], i, i+1)
		return nil
	}
	if w := <-ch; w != nil {
		if p.closed {
			p.discard(w)
		} else {
			p.count++
			p.place(key, w)
		}
	}
	return nil
}

// handOver gives w to the first run waiting for key and reports whether
// there was one; a nil w tells it the start failed. Called with p.mu held.
func (p *warmPool) handOver(key string, w *warmPod) bool {
	list := p.waiters[key]
	if len(list) == 0 {
		return false
	}
	list[0] <- w
	if p.waiters[key] = list[1:]; len(p.waiters[key]) == 0 {
		delete(p.waiters, key)
	}
	return true
}

// refill carries out the sizer's plan for spec's configuration (sandbox/warm):
// idle Pods it no longer wants are deleted, and the ones it wants started in
// the background. Runs call it once they have their Result.
func (p *warmPool) refill(spec *sandbox.Spec, key string) {
	if p == nil || key == "" {
		return
	}
	// What the Pod is made of, never the run's command, input or
	// variables: nothing of one request reaches a Pod that serves another.
	tmpl := sandbox.Spec{
		Skill: spec.Skill, SkillVersion: spec.SkillVersion, SkillDir: spec.SkillDir, Workspace: spec.Workspace,
		WorkspaceWritable: spec.WorkspaceWritable, Image: spec.Image, Limits: spec.Limits,
	}
	if p.k.podKey(&tmpl) != key {
		// podFor reads a Spec field the template lacks: a warm Pod would
		// differ from the run's, so there is none.
		p.k.log.Error("warm sandbox pod would differ from a cold one; not pooling", "skill", spec.Skill)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	plan := p.sizer.Plan(key, p.held())
	for k, n := range plan.Remove {
		p.trim(k, n)
	}
	for range plan.Start {
		p.count++
		p.starting[key]++
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			p.add(key, tmpl)
		}()
	}
}

// held is what the pool holds, idle or starting, by key. Called with p.mu
// held.
func (p *warmPool) held() map[string]warm.Count { return warm.Held(p.idle, p.starting) }

// trim deletes the n longest idle Pods of key. Called with p.mu held.
func (p *warmPool) trim(key string, n int) {
	list := p.idle[key]
	n = min(n, len(list))
	for _, w := range list[:n] {
		w.timer.Stop()
		p.count--
		p.discard(w)
	}
	if p.idle[key] = slices.Delete(list, 0, n); len(p.idle[key]) == 0 {
		delete(p.idle, key)
	}
}

// add starts one Pod for tmpl and hands it to a waiting run, or makes it
// idle under key. Its place in count and starting is taken.
func (p *warmPool) add(key string, tmpl sandbox.Spec) {
	began := p.sizer.Now()
	w, err := p.start(tmpl)
	if err == nil {
		p.sizer.Started(key, p.sizer.Now().Sub(began))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.starting[key]--; p.starting[key] == 0 {
		delete(p.starting, key)
	}
	if err != nil || p.closed {
		p.count--
		if err != nil && p.ctx.Err() == nil {
			p.k.log.Warn("start warm sandbox pod", "error", err)
		}
		if w != nil {
			p.discard(w)
		}
		p.handOver(key, nil) // that run starts a Pod of its own
		return
	}
	p.place(key, w)
}

// place hands a started Pod to a waiting run, or makes it idle until its
// maxIdle is up. Called with p.mu held; w holds a place in count.
func (p *warmPool) place(key string, w *warmPod) {
	if p.handOver(key, w) {
		p.count--
		return
	}
	w.timer = time.AfterFunc(p.maxIdle-time.Since(w.created), func() { p.expire(key, w) })
	p.idle[key] = append(p.idle[key], w)
}

// expire deletes a Pod that waited too long.
func (p *warmPool) expire(key string, w *warmPod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[key]
	if i := slices.Index(list, w); i >= 0 {
		if p.idle[key] = slices.Delete(list, i, i+1); len(p.idle[key]) == 0 {
			delete(p.idle, key)
		}
		p.count--
		p.discard(w)
	}
}

// discard deletes a Pod that no run uses, in the background.
func (p *warmPool) discard(w *warmPod) {
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
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
	}()
}

// close deletes the idle Pods and those starting, tells waiting runs to
// start their own, and returns once every deletion has been made.
func (p *warmPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.cancel()
	for key, list := range p.idle {
		for _, w := range list {
			w.timer.Stop()
			p.count--
			p.discard(w)
		}
		delete(p.idle, key)
	}
	for key := range p.waiters {
		for p.handOver(key, nil) {
		}
	}
	p.mu.Unlock()
	p.bg.Wait()
}

// counts records whether a run that could use the pool got a Pod.
func (p *warmPool) counts(key string, hit bool) {
	if p == nil || key == "" {
		return
	}
	if hit {
		p.hits.Add(1)
	} else {
		p.misses.Add(1)
	}
}

// PoolStats returns the warm pool's figures; all zero when it is off.
func (k *Kube) PoolStats() sandbox.PoolStats {
	p := k.pool
	if p == nil {
		return sandbox.PoolStats{}
	}
	p.mu.Lock()
	ready := p.count
	p.mu.Unlock()
	return sandbox.PoolStats{Size: p.sizer.Max(), Ready: ready, Hits: p.hits.Load(), Misses: p.misses.Load()}
}
