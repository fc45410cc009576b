package otlp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/otlp"
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
			cfg := otlp.Config{Enabled: tc.enabled, Getenv: func(k string) string { return tc.env[k] }}
			require.Equal(t, tc.on, cfg.On())
		})
	}
}

// Off, Setup installs nothing: spans stay the global no-op's, and a
// traceparent given by a caller is not even parsed.
func TestOffIsFree(t *testing.T) {
	before := otel.GetTracerProvider()
	shutdown, err := otlp.Setup(context.Background(), otlp.Config{})
	require.NoError(t, err)
	require.NoError(t, shutdown(context.Background()))
	require.Equal(t, before, otel.GetTracerProvider())
	_, span := telemetry.Tracer().Start(context.Background(), "x")
	require.False(t, span.IsRecording())
	ctx := telemetry.WithTraceParent(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	require.Empty(t, telemetry.TraceParent(ctx))
}
