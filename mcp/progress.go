package mcp

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/size"
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
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	notify := func(progress float64, msg string) {
		err := req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: token, Progress: progress, Message: msg})
		if err != nil && ctx.Err() == nil {
			h.log.Debug("progress notification failed", "err", err)
		}
	}
	go func() {
		defer close(done)
		notify(0, what+": starting")
		t := time.NewTicker(h.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				elapsed := time.Since(start)
				notify(elapsed.Seconds(), fmt.Sprintf("%s: running for %s, %s of output so far",
					what, elapsed.Round(100*time.Millisecond), size.Format(written.Load())))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// counter counts output bytes as they arrive. It never blocks: a live
// writer that blocked would hold up the run.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}
