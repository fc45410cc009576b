package mcp

import (
	"context"
	"regexp"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// traceCalls makes every tool call a span, continuing the agent host's
// trace when the request's _meta carries a W3C traceparent (and
// tracestate). Only the tool's name is recorded, never its arguments.
// With tracing off the span is the no-op one.
// toolName is what a tool name of this server looks like.
var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func traceCalls(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		p, ok := req.GetParams().(*mcpsdk.CallToolParamsRaw)
		if method != "tools/call" || !ok {
			return next(ctx, method, req)
		}
		meta := p.GetMeta()
		parent, _ := meta["traceparent"].(string)
		state, _ := meta["tracestate"].(string)
		ctx = telemetry.WithTraceParent(ctx, parent, state)
		// The tool name is the caller's text, not yet checked against the
		// tools there are: only a plausible one names the span.
		name, attrs := "tools/call", []attribute.KeyValue{attribute.String("mcp.method.name", method)}
		if toolName.MatchString(p.Name) {
			name += " " + p.Name
			attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name))
		}
		ctx, span := telemetry.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		res, err := next(ctx, method, req)
		typ := ""
		if err != nil {
			typ = "mcp"
		} else if r, ok := res.(*mcpsdk.CallToolResult); ok && r.IsError {
			span.SetAttributes(attribute.String("error.type", "tool_error"))
		}
		telemetry.End(span, err, typ)
		return res, err
	}
}
