package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names sandboxrun's instrumentation scope.
const TracerName = "github.com/sandboxrun/sandboxrun"

// Tracer is sandboxrun's tracer from the global provider: a no-op one
// until Setup installs another.
func Tracer() trace.Tracer { return otel.Tracer(TracerName) }

// Config says whether and where to trace.
type Config struct {
	// Enabled is the operator's switch (--trace). Tracing is also on when
	// OTEL_TRACES_EXPORTER is "otlp", and off whatever else says so when
	// OTEL_SDK_DISABLED is "true" or OTEL_TRACES_EXPORTER is "none".
	Enabled bool
	// Version is sandboxrun's, the service.version attribute.
	Version string
	// Exporter replaces the OTLP/HTTP exporter (tests: an in-memory one).
	// The OTLP one reads OTEL_EXPORTER_OTLP_ENDPOINT,
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and the other standard variables.
	Exporter sdktrace.SpanExporter
	// Sync exports each span as it ends instead of in batches (tests).
	Sync bool
	// Getenv reads the environment (os.Getenv); nil reads nothing.
	Getenv func(string) string
}

// On reports whether cfg turns tracing on.
func (cfg Config) On() bool {
	get := cfg.Getenv
	if get == nil {
		get = func(string) string { return "" }
	}
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(get("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return cfg.Enabled
}

// Shutdown flushes and stops what Setup started.
type Shutdown func(context.Context) error

// Setup installs a tracer provider and the W3C trace-context propagator
// when cfg turns tracing on; otherwise it changes nothing and tracing stays
// free. The service name is OTEL_SERVICE_NAME, else "sandboxrun".
func Setup(ctx context.Context, cfg Config) (Shutdown, error) {
	if !cfg.On() {
		return func(context.Context) error { return nil }, nil
	}
	exp := cfg.Exporter
	if exp == nil {
		var err error
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("set up the OTLP trace exporter (OTEL_EXPORTER_OTLP_ENDPOINT): %w", err)
		}
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(semconv.ServiceVersion(cfg.Version)))
	if err != nil {
		return nil, fmt.Errorf("describe the traced service: %w", err)
	}
	name := "sandboxrun"
	if cfg.Getenv != nil && cfg.Getenv("OTEL_SERVICE_NAME") != "" {
		name = cfg.Getenv("OTEL_SERVICE_NAME")
	}
	res, err = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		return nil, fmt.Errorf("describe the traced service: %w", err)
	}
	opt := sdktrace.WithBatcher(exp)
	if cfg.Sync {
		opt = sdktrace.WithSyncer(exp)
	}
	tp := sdktrace.NewTracerProvider(opt, sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp.Shutdown, nil
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

// Start starts a span named name with attrs under ctx's span: the no-op
// span, for the cost of a context lookup, when tracing is off.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
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
