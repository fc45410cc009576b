package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names sandboxrun's instrumentation scope.
const TracerName = "github.com/sandboxrun/sandboxrun"

// Tracer is sandboxrun's tracer from the global provider: a no-op one
// until otlp.Setup (linked by the CLI only) installs another.
func Tracer() trace.Tracer { return otel.Tracer(TracerName) }

// Start starts a span named name under ctx's, with attrs; with tracing
// off it is the no-op span and costs a context lookup.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// TraceParent is ctx's span as a W3C traceparent value, for the sandboxed
// process's TRACEPARENT; "" when ctx carries no span.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// WithTraceParent continues the trace a W3C traceparent (and tracestate)
// names, as an MCP request's _meta carries them; ctx unchanged when they
// name none or tracing is off.
func WithTraceParent(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return otel.GetTextMapPropagator().Extract(ctx, c)
}

// End ends span with err's status: the error.type attribute and the status
// description name what kind of failure it was (typ, chosen by the caller
// from the error's classification). The error's text is not recorded: it
// may quote a command or a path the request named.
func End(span trace.Span, err error, typ string) {
	if err != nil && span.IsRecording() {
		if typ == "" {
			typ = "_OTHER"
		}
		span.SetAttributes(attribute.String("error.type", typ))
		span.SetStatus(codes.Error, typ)
	}
	span.End()
}

// EventAt records on span what happened at t, when it did (t not zero).
func EventAt(span trace.Span, name string, t time.Time) {
	if !t.IsZero() {
		span.AddEvent(name, trace.WithTimestamp(t))
	}
}
