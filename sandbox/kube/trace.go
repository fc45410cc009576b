package kube

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// A run's trace on this backend: sandbox.run holds sandbox.queue (a free
// slot), pod.create (the API call), pod.start (until the container runs,
// with the Pod's scheduling as an event), pod.attach, the job's events
// (job sent, first output byte, result frame) and pod.delete. A warm run
// has no pod.create, pod.start or pod.attach: its Pod was ready.

// endSpan ends a step with err; its error.type is "kubernetes" (an API call
// failed) as the text is no label.
func endSpan(s trace.Span, err error) { telemetry.End(s, err, "kubernetes") }

// eventAt records what happened at t, when it did (t not zero).
func eventAt(s trace.Span, name string, t time.Time) {
	if !t.IsZero() {
		s.AddEvent(name, trace.WithTimestamp(t))
	}
}
