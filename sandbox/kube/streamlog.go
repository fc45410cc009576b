package kube

import (
	"context"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// withStreamLog is ctx carrying the logger client-go's attach streams
// report to: the runner's, every record at Debug. Those streams report a
// copy that fails because the run closed its end first ("use of closed
// network connection") as an error, on klog's standard error by default;
// whether the attach failed is Attach's own answer, so what the streams
// say is for a debug log only.
func withStreamLog(ctx context.Context, log *slog.Logger) context.Context {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return klog.NewContext(ctx, logr.FromSlogHandler(debugOnly{log.Handler()}).WithName("client-go"))
}

// debugOnly hands every record on at Debug.
type debugOnly struct{ slog.Handler }

func (h debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

// Handle checks the level itself: logr hands errors on without asking.
func (h debugOnly) Handle(ctx context.Context, r slog.Record) error {
	if !h.Handler.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	r.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, r)
}

func (h debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{h.Handler.WithAttrs(as)} }

func (h debugOnly) WithGroup(name string) slog.Handler { return debugOnly{h.Handler.WithGroup(name)} }
