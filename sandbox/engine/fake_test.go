package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// fakeDriver starts fake sandboxes whose "init" answers a job with one
// stdout frame and a report, unless told to hang.
type fakeDriver struct {
	capacity sandbox.HostCapacity
	// gate, when set, holds Start: entered closes once Start is called,
	// and Start returns when release closes, so a caller can leave in
	// between whatever the machine's speed.
	entered, release chan struct{}
	// gateAfter: the gate holds the start that comes after this many.
	gateAfter int32
	// hang: the fake init never reports.
	hang bool
	// pooled: Key names every template the same way.
	pooled bool
	// usage: the boxes read their usage (usageBox); work is how long the
	// fake init takes before it reports.
	usage bool
	work  time.Duration
	// countless: the fake init's report lacks the OOM-kill count, and
	// the boxes end through EndReported (reportedBox) when reported is
	// set.
	countless, reported bool

	mu      sync.Mutex
	started []*fakeBox
	starts  atomic.Int32
}

func (d *fakeDriver) Name() string { return "fake" }

func (d *fakeDriver) Capacity(context.Context) (sandbox.HostCapacity, error) { return d.capacity, nil }

func (d *fakeDriver) Check(context.Context, *sandbox.Spec) error { return nil }

func (d *fakeDriver) Plan(_ context.Context, tmpl *sandbox.Spec) (engine.Plan, error) {
	if !d.pooled {
		return engine.Plan{}, nil
	}
	return engine.Plan{Key: tmpl.Skill + "|" + tmpl.Workspace + "|" + strings.Join(tmpl.Argv, " ")}, nil
}

func (d *fakeDriver) Start(ctx context.Context, tmpl *sandbox.Spec, _ engine.Plan) (engine.Box, error) {
	if n := d.starts.Add(1); d.release != nil && n > d.gateAfter && n == d.gateAfter+1 {
		close(d.entered)
		<-d.release
	}
	// The sandbox is made whatever the caller does meanwhile, as an
	// engine finishes a create whose client left.
	b := newFakeBox(tmpl.RunID, d.hang, d.work, d.countless)
	d.mu.Lock()
	d.started = append(d.started, b)
	d.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err // the caller never hears of it: left behind
	}
	if d.usage {
		return &usageBox{fakeBox: b}, nil
	}
	if d.reported {
		return &reportedBox{fakeBox: b}, nil
	}
	return b, nil
}

// alive counts the sandboxes started and not removed.
func (d *fakeDriver) alive() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, b := range d.started {
		if !b.removed.Load() {
			n++
		}
	}
	return n
}

type fakeBox struct {
	runID    string
	inR      *io.PipeReader
	inW      *io.PipeWriter
	outR     *io.PipeReader
	outW     *io.PipeWriter
	log      *sandbox.InitLog
	done     chan struct{}
	killOnce sync.Once
	killed   chan struct{}
	removed  atomic.Bool
	// bound and held say what Bind saw.
	bound, held atomic.Bool
	handed      atomic.Bool
	jobs        chan frame.Job
	ends        atomic.Int32 // calls of End
}

func newFakeBox(runID string, hang bool, work time.Duration, countless bool) *fakeBox {
	b := &fakeBox{runID: runID, log: sandbox.NewInitLog(), done: make(chan struct{}), killed: make(chan struct{}), jobs: make(chan frame.Job, 1)}
	b.inR, b.inW = io.Pipe()
	b.outR, b.outW = io.Pipe()
	go b.init(hang, work, countless)
	return b
}

// init reads messages until a job, answers it, and for a held job waits
// for stdin to close.
func (b *fakeBox) init(hang bool, work time.Duration, countless bool) {
	defer close(b.done)
	dec := json.NewDecoder(bufio.NewReader(b.inR))
	for {
		var raw map[string]json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			_ = b.outW.CloseWithError(err)
			return
		}
		if _, ok := raw["argv"]; !ok {
			continue // a prelude
		}
		var job frame.Job
		all, _ := json.Marshal(raw)
		_ = json.Unmarshal(all, &job)
		b.jobs <- job
		if hang {
			<-b.killed
			return
		}
		_ = frame.Write(b.outW, frame.Stdout, []byte("hello\n"))
		time.Sleep(work)
		r := frame.Report{ExitCode: 0, HoldUsedBytes: 10, HoldFreeBytes: 1 << 20, OOMKills: new(int64)}
		if countless {
			r.OOMKills = nil
		}
		rep, _ := json.Marshal(r)
		_ = frame.Write(b.outW, frame.Result, rep)
		_, _ = io.Copy(io.Discard, b.inR) // held: until stdin closes
		_ = b.outW.Close()
		return
	}
}

func (b *fakeBox) RunID() string { return b.runID }
func (b *fakeBox) Alive() bool {
	select {
	case <-b.done:
		return false
	default:
		return !b.removed.Load()
	}
}

func (b *fakeBox) Bind(_ context.Context, run *engine.Run) error {
	b.bound.Store(true)
	b.held.Store(run.Held())
	if run.Held() {
		run.WorkspaceBase = 100
	}
	return nil
}
func (b *fakeBox) Input() io.WriteCloser          { return b.inW }
func (b *fakeBox) Frames() io.Reader              { return b.outR }
func (b *fakeBox) InitLog() *sandbox.InitLog      { return b.log }
func (b *fakeBox) ImageID(context.Context) string { return "sha256:fake" }
func (b *fakeBox) HandBack(context.Context, *engine.Run) ([]sandbox.FileChange, error) {
	b.handed.Store(true)
	return []sandbox.FileChange{{Path: "out.txt", Change: sandbox.FileCreated}}, nil
}

func (b *fakeBox) Kill(context.Context) error {
	b.killOnce.Do(func() {
		close(b.killed)
		_ = b.inW.CloseWithError(errors.New("killed"))
		_ = b.outW.CloseWithError(errors.New("killed"))
	})
	return nil
}

func (b *fakeBox) End(ctx context.Context) (engine.Ending, error) {
	b.ends.Add(1)
	select {
	case <-b.done:
	case <-time.After(time.Second):
		_ = b.Kill(ctx)
		<-b.done
	}
	_ = b.outR.Close()
	return engine.Ending{InitExit: 0}, nil
}

func (b *fakeBox) Remove(context.Context) error {
	b.removed.Store(true)
	return nil
}

// usageBox is a fakeBox that reads its usage: each read finds 100 ms of
// CPU more, 1 MiB of memory more, one more pid and 4 KiB more written to
// the workspace.
type usageBox struct {
	*fakeBox
	reads atomic.Int64
}

var _ engine.UsageReader = (*usageBox)(nil)

func (b *usageBox) ReadUsage(context.Context) (sandbox.UsageSample, error) {
	n := b.reads.Add(1)
	written := n << 12
	return sandbox.UsageSample{CPU: time.Duration(n) * 100 * time.Millisecond, MemoryBytes: n << 20, Pids: n, WorkspaceBytes: &written}, nil
}

// reportedBox is a fakeBox that ends a reported sandbox at once, and
// says the memory cgroup killed something.
type reportedBox struct {
	*fakeBox
	endReported atomic.Int32
}

var _ engine.Reported = (*reportedBox)(nil)

func (b *reportedBox) EndReported(context.Context) (engine.Ending, error) {
	b.endReported.Add(1)
	_ = b.outR.Close()
	return engine.Ending{InitExit: -1, OOMKilled: true}, nil
}
