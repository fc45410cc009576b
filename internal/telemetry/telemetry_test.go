package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/telemetrytest"
)

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
