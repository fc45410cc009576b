package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/telemetrytest"
)

func TestOn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enabled bool
		env     map[string]string
		on      bool
	}{
		{"off by default", false, nil, false},
		{"the flag", true, nil, true},
		{"the standard exporter variable", false, map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"an endpoint alone is not a switch", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{"the SDK disabled wins", true, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none wins", true, map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := telemetry.Config{Enabled: tc.enabled, Getenv: func(k string) string { return tc.env[k] }}
			require.Equal(t, tc.on, cfg.On())
		})
	}
}

// Off, Setup installs nothing: spans stay the global no-op's, and a
// traceparent given by a caller is not even parsed.
func TestOffIsFree(t *testing.T) {
	before := otel.GetTracerProvider()
	shutdown, err := telemetry.Setup(context.Background(), telemetry.Config{})
	require.NoError(t, err)
	require.NoError(t, shutdown(context.Background()))
	require.Equal(t, before, otel.GetTracerProvider())
	_, span := telemetry.Tracer().Start(context.Background(), "x")
	require.False(t, span.IsRecording())
	ctx := telemetry.WithTraceParent(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	require.Empty(t, telemetry.TraceParent(ctx))
}

func TestTraceParentRoundTrip(t *testing.T) {
	exp := telemetrytest.Record(t)
	const given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := telemetry.WithTraceParent(context.Background(), given, "vendor=1")
	require.Equal(t, given, telemetry.TraceParent(ctx))
	require.Equal(t, "vendor=1", trace.SpanContextFromContext(ctx).TraceState().String())
	ctx, span := telemetry.Tracer().Start(ctx, "child")
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-"+span.SpanContext().SpanID().String()+"-01", telemetry.TraceParent(ctx))
	telemetry.End(span, context.Canceled, "canceled")
	got := exp.GetSpans()
	require.Len(t, got, 1)
	require.Equal(t, "canceled", got[0].Status.Description)
	require.Empty(t, telemetry.TraceParent(context.Background()))
	require.Equal(t, context.Background(), telemetry.WithTraceParent(context.Background(), "", ""))
}
