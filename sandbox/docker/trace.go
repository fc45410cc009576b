package docker

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// endSpan ends a step with err; its error.type is "docker" (an engine
// call failed) as the text is no label.
func endSpan(s trace.Span, err error) { telemetry.End(s, err, "docker") }
