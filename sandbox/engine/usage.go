package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// UsageReader is a Box that can read its sandbox's resource use while the
// script runs (Docker: the container's cgroup or the engine's stats; oci:
// runc's cgroup). A Box without it sends no live usage.
type UsageReader interface {
	// ReadUsage reads the sandbox's use now. It is called from one
	// goroutine at a time, concurrently with the Box's other methods
	// until the run's report.
	ReadUsage(ctx context.Context) (sandbox.UsageSample, error)
}

// usageWatch samples one run's sandbox every spec.UsageEvery until it is
// stopped.
type usageWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	peaks  sandbox.UsagePeaks
}

// watchUsage starts sampling box for spec when the spec asks for it and
// the box can; the watch it returns is never nil.
func watchUsage(ctx context.Context, box Box, spec *sandbox.Spec, log *slog.Logger) *usageWatch {
	w := &usageWatch{done: make(chan struct{})}
	r, ok := box.(UsageReader)
	if !ok || spec.UsageEvery <= 0 {
		close(w.done)
		return w
	}
	every := max(spec.UsageEvery, sandbox.MinUsageEvery)
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go w.run(ctx, r, every, spec.Usage, log)
	return w
}

// usageReadTimeout is the least time one read may take.
const usageReadTimeout = 5 * time.Second

// usageFailures is how many reads in a row may fail before a watch gives
// up: a sandbox whose use cannot be read costs nothing more.
const usageFailures = 3

func (w *usageWatch) run(ctx context.Context, r UsageReader, every time.Duration, send func(sandbox.Usage), log *slog.Logger) {
	defer close(w.done)
	read := func() (sandbox.UsageSample, time.Time, error) {
		// A read through an engine's stats may take a second (Docker
		// 20.10's one-shot stats: bench/livemetrics): bounded, but not
		// by a short interval.
		rctx, stop := context.WithTimeout(ctx, max(every, usageReadTimeout))
		defer stop()
		s, err := r.ReadUsage(rctx)
		return s, time.Now(), err
	}
	began := time.Now()
	prev, prevAt, err := read()
	failed := 0
	if err != nil {
		failed++
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for failed < usageFailures {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, at, err := read()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failed++
			log.Debug("read the sandbox's usage", "error", err)
			continue
		}
		ok := failed == 0 // prev is a real sample
		failed = 0
		u := sandbox.Usage{ElapsedMS: at.Sub(began).Milliseconds(), MemoryBytes: s.MemoryBytes, Pids: s.Pids, WorkspaceBytes: s.WorkspaceBytes}
		if ok && at.After(prevAt) && s.CPU >= prev.CPU {
			u.CPUPercent = cpuPercent(s.CPU-prev.CPU, at.Sub(prevAt))
		}
		prev, prevAt = s, at
		w.peaks.Add(u)
		if send != nil {
			send(u)
		}
	}
	log.Debug("stopped reading the sandbox's usage after failures")
}

// cpuPercent is cpu used over wall, as a share of one core, to 0.1 %.
func cpuPercent(cpu, wall time.Duration) float64 {
	p := float64(cpu) / float64(wall) * 100
	return float64(int64(p*10+0.5)) / 10
}

// stop ends the watch and waits for it: no sample is sent after stop
// returns. It returns the peaks and may be called again.
func (w *usageWatch) stop() sandbox.UsagePeaks {
	w.once.Do(func() {
		if w.cancel != nil {
			w.cancel()
		}
	})
	<-w.done
	return w.peaks
}
