package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/telemetry/telemetrytest"
)

// A cold run's trace names the Pod's phases, each a child of sandbox.run,
// and the job's events.
func TestRunTrace(t *testing.T) {
	exp := telemetrytest.Record(t)
	init := &fakeInit{script: reply("hi", frame.Report{})}
	k, _ := newFake(t, init, nil)
	require.NoError(t, k.CheckNetwork(context.Background()))
	exp.Reset()
	res, err := k.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.NoError(t, k.WaitIdle(context.Background())) // pod.delete

	spans := exp.GetSpans()
	byName := map[string]int{}
	for i, s := range spans {
		byName[s.Name] = i
	}
	for _, name := range []string{"sandbox.run", "sandbox.queue", "pod.create", "pod.start", "pod.delete"} {
		require.Contains(t, byName, name)
	}
	run := spans[byName["sandbox.run"]]
	for _, name := range []string{"sandbox.queue", "pod.create", "pod.start", "pod.delete"} {
		require.Equal(t, run.SpanContext.SpanID(), spans[byName[name]].Parent.SpanID(), "%s is a step of the run", name)
	}
	var events []string
	for _, e := range run.Events {
		events = append(events, e.Name)
	}
	require.Subset(t, events, []string{"job sent", "first output byte", "result frame"})
	var attrs = map[string]string{}
	for _, a := range run.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	require.Equal(t, "kubernetes", attrs["container.runtime"])
	require.Equal(t, res.ID, attrs["sandboxrun.run_id"])
	require.NotEmpty(t, attrs["k8s.pod.name"])
}
