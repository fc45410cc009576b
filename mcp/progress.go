package mcp

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// watch reports a run's progress to a client that sent a progress token:
// once when it starts, then every interval, with the time elapsed (the
// progress value, which only grows) and how much output the run has written
// so far. A run has no known total, so none is sent. The returned func stops
// the reports; it returns once the last one is sent.
func (h *handlers) watch(ctx context.Context, req *mcpsdk.CallToolRequest, what string, r *sandboxrun.Request) (stop func()) {
	if req == nil || req.Session == nil || req.Params == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	var written atomic.Int64
	r.Stdout, r.Stderr = counter{&written}, counter{&written}
	// The sandbox's use is sampled as often as progress is reported (the
	// Service raises it to its floor); each report carries the latest.
	var usage atomic.Pointer[sandbox.Usage]
	r.UsageEvery, r.Usage = h.interval, func(u sandbox.Usage) { usage.Store(&u) }
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	notify := func(progress float64, msg string, u *sandbox.Usage) {
		p := &mcpsdk.ProgressNotificationParams{ProgressToken: token, Progress: progress, Message: msg}
		if u != nil {
			p.Meta = mcpsdk.Meta{UsageMetaKey: u}
		}
		err := req.Session.NotifyProgress(ctx, p)
		if err != nil && ctx.Err() == nil {
			h.log.Debug("progress notification failed", "err", err)
		}
	}
	go func() {
		defer close(done)
		notify(0, what+": starting", nil)
		t := time.NewTicker(h.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				elapsed := time.Since(start)
				msg := fmt.Sprintf("%s: running for %s, %s of output so far",
					what, elapsed.Round(100*time.Millisecond), size.Format(written.Load()))
				u := usage.Load()
				if u != nil {
					msg += fmt.Sprintf("; CPU %.0f%%, memory %s, %d processes", u.CPUPercent, size.Format(u.MemoryBytes), u.Pids)
					if u.WorkspaceBytes != nil {
						msg += ", " + size.Format(*u.WorkspaceBytes) + " written to the workspace"
					}
				}
				notify(elapsed.Seconds(), msg, u)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// UsageMetaKey names, in a progress notification's _meta, the latest
// sample of the run's resource use (sandbox.Usage: elapsed_ms,
// cpu_percent, memory_bytes, pids, and workspace_bytes where measured), on
// backends that can read it.
const UsageMetaKey = "sandboxrun/usage"

// counter counts output bytes as they arrive. It never blocks: a live
// writer that blocked would hold up the run.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}
