package docker

import (
	"github.com/docker/docker/pkg/stringid"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// warmPool keeps containers that are created, attached and started, with
// sandbox-init waiting for its job, so that a run skips the engine's
// slowest steps. After each run it tops itself up to what its sizer plans
// for that run's configuration (a fixed size, or the configuration's
// recent demand within a cap), removing idle containers the plan no
// longer wants; a run that
// finds none idle waits for one already starting rather than start another
// beside it. A warm container serves one run only, and only a run whose
// container configuration (image, user, mounts, limits, labels except the
// run's own) is identical; it is removed afterwards like any other. Idle
// containers are removed after maxIdle and when the runner closes; their
// owner labels let Reap find them if the process dies.
type warmPool struct {
	d        *Runner
	sizer    *warm.Sizer
	maxIdle  time.Duration
	prestart bool // warm containers may start python3 ahead of the job

	mu     sync.Mutex
	idle   map[string][]*warmBox
	count  int // idle plus starting
	closed bool
	bg     *background // starts and removals, shared with the runner
	// starting counts the starts under way per key; waiters are the runs
	// waiting for one of them, first come first served.
	starting map[string]int
	waiters  map[string][]chan *box
	// hits and misses count runs that could use the pool and did or did
	// not get a warm container.
	hits, misses atomic.Uint64
}

type warmBox struct {
	*box
	timer *time.Timer
}

func newWarmPool(d *Runner, sizer *warm.Sizer, maxIdle time.Duration, prestart bool) *warmPool {
	if sizer == nil {
		return nil
	}
	return &warmPool{d: d, sizer: sizer, maxIdle: maxIdle, prestart: prestart, idle: map[string][]*warmBox{}, bg: &d.bg,
		starting: map[string]int{}, waiters: map[string][]chan *box{}}
}

// key identifies a container configuration: runs with equal keys can use
// each other's warm containers. Empty when the pool is off.
func (p *warmPool) key(spec *sandbox.Spec, usr usrMount) string {
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
		tmpl.Workspace, params.workspaceVolume = "held", "held"
		writeCap = spec.Limits.WorkspaceWriteBytes
	}
	cfg, hc := containerConfig(&tmpl, params)
	b, err := json.Marshal([]any{cfg, hc, writeCap})
	if err != nil {
		return "" // cannot happen for these types; no key, no pooling
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// take returns a live warm container for key, or nil. With none idle but
// more starting than runs already waiting, it waits for one of those: it is
// ready sooner than a container started now, and the engine is not asked
// for one more. It returns nil when that start fails or ctx ends first.
func (p *warmPool) take(ctx context.Context, key string) *box {
	if p == nil || key == "" {
		return nil
	}
	p.mu.Lock()
	p.sizer.Arrive(key, len(p.idle[key]))
	for list := p.idle[key]; len(list) > 0; list = p.idle[key] {
		w := list[len(list)-1]
		p.idle[key] = list[:len(list)-1]
		p.count--
		w.timer.Stop()
		if w.s.alive() {
			p.mu.Unlock()
			w.warm = true
			return w.box
		}
		p.d.log.Warn("warm sandbox died while idle", "container_id", stringid.TruncateID(w.id))
		p.discard(w.box)
	}
	delete(p.idle, key)
	if p.closed || p.starting[key] <= len(p.waiters[key]) {
		p.mu.Unlock()
		return nil
	}
	ch := make(chan *box, 1)
	p.waiters[key] = append(p.waiters[key], ch)
	p.mu.Unlock()

	select {
	case b := <-ch:
		return b
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.waiters[key], ch); i >= 0 {
		p.waiters[key] = slices.Delete(p.waiters[key], i, i+1)
		return nil
	}
	if b := <-ch; b != nil { // handed over meanwhile: to the next run
		if p.closed {
			p.discard(b)
			return nil
		}
		p.count++
		p.place(key, b)
	}
	return nil
}

// handOver gives b to the first run waiting for key and reports whether
// there was one. A nil b tells it the start failed. Called with p.mu held.
func (p *warmPool) handOver(key string, b *box) bool {
	list := p.waiters[key]
	if len(list) == 0 {
		return false
	}
	list[0] <- b
	p.waiters[key] = list[1:]
	if len(p.waiters[key]) == 0 {
		delete(p.waiters, key)
	}
	return true
}

// refill carries out the sizer's plan for spec's configuration: idle
// containers it no longer wants are removed, and the ones it wants are
// started in the background. Runs call it once they have their Result, so
// the starts do not compete with a script for the CPUs.
func (p *warmPool) refill(spec *sandbox.Spec, key string, usr usrMount) {
	if p == nil || key == "" {
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
	// What the container's configuration is made of, and what its
	// prelude may use: never the run's arguments or caller variables.
	tmpl := sandbox.Spec{
		Skill: spec.Skill, SkillVersion: spec.SkillVersion, SkillDir: spec.SkillDir, Workspace: spec.Workspace,
		WorkspaceWritable: spec.WorkspaceWritable, Image: spec.Image, Limits: spec.Limits,
	}
	if p.prestart && len(spec.Argv) > 0 {
		tmpl.Argv = []string{spec.Argv[0]}
	}
	for range plan.Start {
		p.count++
		p.starting[key]++
		t := tmpl
		p.bg.run(func() { p.add(key, &t, usr) })
	}
}

// held is what the pool holds, idle or starting, by key. Called with p.mu
// held.
func (p *warmPool) held() map[string]warm.Count { return warm.Held(p.idle, p.starting) }

// trim removes the n longest idle containers of key. Called with p.mu held.
func (p *warmPool) trim(key string, n int) {
	list := p.idle[key]
	n = min(n, len(list))
	for _, w := range list[:n] {
		w.timer.Stop()
		p.count--
		p.discard(w.box)
	}
	if p.idle[key] = slices.Delete(list, 0, n); len(p.idle[key]) == 0 {
		delete(p.idle, key)
	}
}

// add starts one container for tmpl and hands it to a waiting run, or
// makes it idle under key. Its place in count and starting is taken.
func (p *warmPool) add(key string, tmpl *sandbox.Spec, usr usrMount) {
	began := p.sizer.Now()
	b, err := p.start(tmpl, usr)
	if err == nil {
		p.sizer.Started(key, p.sizer.Now().Sub(began))
	}
	if err != nil && usr.volume != "" {
		p.d.forgetUsr(usr.imageID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.starting[key]--; p.starting[key] == 0 {
		delete(p.starting, key)
	}
	if err != nil || p.closed {
		p.count--
		if err != nil {
			p.d.log.Warn("start warm sandbox", "error", err)
		}
		if b != nil {
			p.discard(b)
		}
		p.handOver(key, nil) // it starts a container of its own
		return
	}
	b.warm = true
	p.place(key, b)
}

// place hands a started container to a waiting run, or makes it idle.
// Called with p.mu held; b holds a place in count.
func (p *warmPool) place(key string, b *box) {
	if p.handOver(key, b) {
		p.count--
		return
	}
	w := &warmBox{box: b}
	w.timer = time.AfterFunc(p.maxIdle, func() { p.expire(key, w) })
	p.idle[key] = append(p.idle[key], w)
}

func (p *warmPool) start(tmpl *sandbox.Spec, usr usrMount) (*box, error) {
	id, err := sandbox.NewRunID()
	if err != nil {
		return nil, err
	}
	tmpl.RunID = id
	ctx := context.Background()
	var vol *workspaceVolume
	if holdsWorkspace(tmpl) {
		if vol, err = p.d.newWorkspaceVolume(ctx, id, tmpl.Limits.WorkspaceWriteBytes); err != nil {
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
	if msg, ok := prelude(tmpl, p.d.version); ok {
		err = b.s.sendPrelude(msg)
	}
	return b, err
}

// expire removes a container that waited too long.
func (p *warmPool) expire(key string, w *warmBox) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[key]
	for i, x := range list {
		if x == w {
			if p.idle[key] = append(list[:i:i], list[i+1:]...); len(p.idle[key]) == 0 {
				delete(p.idle, key)
			}
			p.count--
			p.discard(w.box)
			return
		}
	}
}

// discard removes a container in the background. Called with p.mu held.
func (p *warmPool) discard(b *box) {
	p.bg.run(func() {
		if b.s != nil {
			b.s.close()
		}
		if err := p.d.remove(context.Background(), b.ref); err != nil {
			p.d.log.Warn("remove warm sandbox", "container_id", b.ref, "error", err)
		}
		if err := p.d.removeWorkspaceVolume(context.Background(), b.vol); err != nil {
			p.d.log.Warn("remove warm workspace volume", "volume", b.vol.name, "error", err)
		}
	})
}

// holdsWorkspace reports whether spec's run has a writable workspace, which the
// runner fills into a volume and hands back (wsvolume.go).
func holdsWorkspace(spec *sandbox.Spec) bool { return spec.Workspace != "" && spec.WorkspaceWritable }

// close removes every idle container; the runner then waits for the
// background work.
func (p *warmPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	for key, list := range p.idle {
		for _, w := range list {
			w.timer.Stop()
			p.discard(w.box)
		}
		delete(p.idle, key)
	}
	p.count = 0
	for key := range p.waiters {
		for p.handOver(key, nil) {
		}
	}
	p.mu.Unlock()
}
