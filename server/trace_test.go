package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry/telemetrytest"
	"github.com/sandboxrun/sandboxrun/server"
)

// A request that names a trace continues it: the handler's span is a
// child of the caller's, the run's is a child of the handler's, and the
// sandbox is handed the run's traceparent.
func TestHTTPContinuesTheCallersTrace(t *testing.T) {
	exp := telemetrytest.Record(t)
	f := start(t, nil, server.Options{})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := call(t, "POST", f.url+"/v1/skills/hello/run", `{"script":"scripts/echo.py"}`, "traceparent", "00-"+traceID+"-"+parentID+"-01")
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	var handler, run trace.SpanContext
	for _, s := range exp.GetSpans() {
		require.Equal(t, traceID, s.SpanContext.TraceID().String(), "%s is in another trace", s.Name)
		switch s.Name {
		case "POST /v1/skills/{name}/run":
			handler = s.SpanContext
			require.Equal(t, parentID, s.Parent.SpanID().String())
		case "sandboxrun.run":
			run = s.SpanContext
		}
	}
	require.True(t, handler.IsValid(), "no span named by the route in %v", exp.GetSpans())
	require.True(t, run.IsValid())
	f.eng.mu.Lock()
	defer f.eng.mu.Unlock()
	require.Equal(t, "00-"+traceID+"-"+run.SpanID().String()+"-01", f.eng.traceParent)
}
