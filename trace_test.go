package sandboxrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/telemetrytest"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(spans tracetest.SpanStubs) map[string]tracetest.SpanStub {
	m := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

// A run is one span with a child per step; the script gets the run's
// traceparent; attributes say what happened and nothing of what was sent.
func TestRunTrace(t *testing.T) {
	exp := telemetrytest.Record(t)
	svc, eng := newService(t, sandboxrun.Config{})
	denied := egresslog.Decision{Time: time.Now(), Method: "CONNECT", Host: "evil.example", Port: 443, Reason: "not in the allowlist"}
	eng.res = &sandbox.Result{ID: "run-1", Skill: "hello", Started: true, Success: false, ExitCode: 3, Image: "sandboxrun/runner:t",
		EgressRecord: &egresslog.Record{Decisions: []egresslog.Decision{denied}}}

	ctx, parent := telemetry.Tracer().Start(context.Background(), "caller")
	secret := "s3cr3t-argument-value"
	_, err := svc.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{Args: []byte(`{"token":"` + secret + `"}`), Env: map[string]string{"API_KEY": secret}})
	require.NoError(t, err)
	parent.End()

	spans := byName(exp.GetSpans())
	run := spans["sandboxrun.run"]
	require.Equal(t, parent.SpanContext().SpanID(), run.Parent.SpanID(), "the run continues the caller's trace")
	for _, step := range []string{"sandboxrun.skill.lookup", "sandboxrun.policy.decide", "sandboxrun.image.choose"} {
		require.Contains(t, spans, step)
		require.Equal(t, run.SpanContext.SpanID(), spans[step].Parent.SpanID(), step)
	}
	a := attrs(run)
	require.Equal(t, "hello", a["sandboxrun.skill"].AsString())
	require.Equal(t, "run-1", a["sandboxrun.run_id"].AsString())
	require.Equal(t, "failure", a["sandboxrun.outcome"].AsString())
	require.Equal(t, int64(3), a["sandboxrun.exit_code"].AsInt64())
	require.False(t, a["sandboxrun.timed_out"].AsBool())
	require.Len(t, run.Events, 1)
	ev := map[attribute.Key]attribute.Value{}
	for _, kv := range run.Events[0].Attributes {
		ev[kv.Key] = kv.Value
	}
	require.Equal(t, "egress decision", run.Events[0].Name)
	require.Equal(t, "evil.example", ev["server.address"].AsString())
	require.False(t, ev["sandboxrun.egress.allowed"].AsBool())

	require.Len(t, eng.specs, 1)
	tp := eng.specs[0].TraceParent
	require.Equal(t, "00-"+run.SpanContext.TraceID().String()+"-"+run.SpanContext.SpanID().String()+"-01", tp,
		"the sandbox joins the trace under the run's span")
	require.Contains(t, sandbox.ScriptEnv(&eng.specs[0], "t"), "TRACEPARENT="+tp)

	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			require.NotContains(t, kv.Value.String(), secret, "%s carries an argument value in %s", s.Name, kv.Key)
		}
	}
}

func TestRefusalTrace(t *testing.T) {
	exp := telemetrytest.Record(t)
	svc, _ := newService(t, sandboxrun.Config{})
	_, err := svc.RunCommand(context.Background(), "hello", "curl http://x", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	spans := byName(exp.GetSpans())
	a := attrs(spans["sandboxrun.run"])
	require.Equal(t, "refused", a["sandboxrun.outcome"].AsString())
	require.Equal(t, "refused", a["error.type"].AsString())
	require.Equal(t, "refused", attrs(spans["sandboxrun.policy.decide"])["error.type"].AsString())
	require.NotContains(t, spans, "sandboxrun.image.choose", "nothing past the refusal")
	require.NotContains(t, spans["sandboxrun.run"].Status.Description, "curl", "an error's text may hold what was asked")
}

// Untraced, the script's environment has no TRACEPARENT.
func TestNoTraceNoTraceParent(t *testing.T) {
	svc, eng := newService(t, sandboxrun.Config{})
	_, err := svc.RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err)
	require.Empty(t, eng.specs[0].TraceParent)
	for _, kv := range sandbox.ScriptEnv(&eng.specs[0], "t") {
		require.False(t, strings.HasPrefix(kv, "TRACEPARENT="))
	}
}
