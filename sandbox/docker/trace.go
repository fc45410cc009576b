package docker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// span starts one step of a run's trace; the no-op span when tracing is
// off.
func span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return telemetry.Start(ctx, name, attrs...)
}

// endSpan ends a step with err; its error.type is "docker" (an engine
// call failed) as the text is no label.
func endSpan(s trace.Span, err error) {
	typ := ""
	if err != nil {
		typ = "docker"
	}
	telemetry.End(s, err, typ)
}

// eventAt records what happened at t, when it did (t not zero).
func eventAt(s trace.Span, name string, t time.Time) {
	if !t.IsZero() {
		s.AddEvent(name, trace.WithTimestamp(t))
	}
}
