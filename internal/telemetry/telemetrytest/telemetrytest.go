// Package telemetrytest records the spans sandboxrun makes, for tests: an
// in-memory exporter installed as the global provider for one test.
package telemetrytest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sandboxrun/sandboxrun/internal/telemetry/otlp"
)

// Record turns tracing on for t's duration, exporting each span as it ends
// to the returned exporter; the no-op provider is back afterwards. Tests
// that call it must not run in parallel with other traced tests.
func Record(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	shutdown, err := otlp.Setup(context.Background(), otlp.Config{Enabled: true, Version: "test", Exporter: exp, Sync: true})
	if err != nil {
		t.Fatalf("set up tracing: %v", err)
	}
	t.Cleanup(func() {
		_ = shutdown(context.Background())
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	return exp
}
