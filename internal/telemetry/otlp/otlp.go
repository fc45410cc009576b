// Package otlp turns tracing on: the OpenTelemetry SDK and its OTLP/HTTP
// exporter, configured by the standard OTEL_* variables. Only programs that
// export traces (the CLI, the tracing bench, tests) link it; the Service, the
// front ends and the backends use the OpenTelemetry API alone (package
// telemetry), which costs nothing and links no SDK or exporter.
package otlp

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

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
