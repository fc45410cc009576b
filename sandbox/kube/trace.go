package kube

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
)

// A run's trace on this backend: sandbox.run (the engine's) holds
// sandbox.queue (a free slot), pod.create (the API call), pod.start (until the container runs,
// with the Pod's scheduling as an event), the job's events
// (job sent, first output byte, result frame) and pod.delete, which the
// engine's teardown makes once the Result is in. A warm run has no
// pod.create or pod.start: its Pod was ready.

// endSpan ends a step with err; its error.type is "kubernetes" (an API call
// failed) as the text is no label.
func endSpan(s trace.Span, err error) { telemetry.End(s, err, "kubernetes") }
