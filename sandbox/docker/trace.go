package docker

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// endSpan ends a step with err; its error.type is "docker" (an engine
// call failed) as the text is no label.
func endSpan(s trace.Span, err error) { telemetry.End(s, err, "docker") }

// eventAt records what happened at t, when it did (t not zero).
func eventAt(s trace.Span, name string, t time.Time) {
	if !t.IsZero() {
		s.AddEvent(name, trace.WithTimestamp(t))
	}
}
