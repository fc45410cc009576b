package sandboxrun

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// endStep ends a step's span with its error, classified as the request's
// Outcome would classify it: never the error's text as a label.
func endStep(span trace.Span, err error) {
	typ := ""
	if err != nil {
		typ = string(OutcomeOf(nil, err))
	}
	telemetry.End(span, err, typ)
}

// endRun ends the request's span with what the Result says: ids, outcome,
// exit code, timeout and OOM, and an event per egress decision. Nothing of
// the arguments, the output or the environment is recorded.
func endRun(span trace.Span, skillName string, res *sandbox.Result, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	outcome := OutcomeOf(res, err)
	span.SetAttributes(attribute.String("sandboxrun.skill", skillName), attribute.String("sandboxrun.outcome", string(outcome)))
	if res != nil {
		span.SetAttributes(
			attribute.String("sandboxrun.run_id", res.ID),
			attribute.Int("sandboxrun.exit_code", res.ExitCode),
			attribute.Bool("sandboxrun.timed_out", res.TimedOut),
			attribute.Bool("sandboxrun.oom_killed", res.OOMKilled),
			attribute.String("container.image.name", res.Image),
		)
		if rec := res.EgressRecord; rec != nil {
			for _, d := range rec.Decisions {
				span.AddEvent("egress decision", trace.WithTimestamp(d.Time), trace.WithAttributes(
					attribute.String("server.address", d.Host),
					attribute.Int("server.port", int(d.Port)),
					attribute.Bool("sandboxrun.egress.allowed", d.Allowed),
					attribute.Int64("sandboxrun.egress.bytes_up", d.BytesUp),
					attribute.Int64("sandboxrun.egress.bytes_down", d.BytesDown),
				))
			}
		}
	}
	typ := ""
	if err != nil {
		typ = string(outcome)
	}
	telemetry.End(span, err, typ)
}
