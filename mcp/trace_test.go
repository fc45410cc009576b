package mcp_test

import (
	"context"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/telemetrytest"
	"github.com/sandboxrun/sandboxrun/mcp"
)

// A tool call whose _meta names a trace continues it down to the sandbox;
// the span names the tool and records none of its arguments.
func TestToolCallContinuesTheHostsTrace(t *testing.T) {
	exp := telemetrytest.Record(t)
	eng := &fakeEngine{}
	cs := session(t, service(t, eng))
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{
		Meta: mcpsdk.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"},
		Name: mcp.ToolRunScript,
		Arguments: map[string]any{
			"skill": "hello", "script": "scripts/echo.py", "args_json": `{"name": "private-value"}`,
		},
	})
	require.NoError(t, err)
	require.False(t, res.IsError, mcptest.Text(res))

	var tool, run, runParent string
	for _, s := range exp.GetSpans() {
		require.Equal(t, traceID, s.SpanContext.TraceID().String(), "%s is in another trace", s.Name)
		for _, kv := range s.Attributes {
			require.NotContains(t, kv.Value.String(), "private-value")
		}
		switch s.Name {
		case "tools/call " + mcp.ToolRunScript:
			tool = s.SpanContext.SpanID().String()
			require.Equal(t, parentID, s.Parent.SpanID().String())
			require.Contains(t, s.Attributes, attribute.String("gen_ai.tool.name", mcp.ToolRunScript))
		case "sandboxrun.run":
			run, runParent = s.SpanContext.SpanID().String(), s.Parent.SpanID().String()
		}
	}
	require.NotEmpty(t, tool)
	require.Equal(t, tool, runParent, "the run is the tool call's child")
	require.Equal(t, "00-"+traceID+"-"+run+"-01", eng.ran()[0].TraceParent)
}
