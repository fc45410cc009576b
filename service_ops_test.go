package sandboxrun_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// reapingEngine is a backend that can reap and keeps per-image state.
type reapingEngine struct {
	fakeEngine
	reaped    []sandbox.ReapOptions
	prepared  []string
	pruned    []bool
	reapErr   error
	prepareTo string
}

func (r *reapingEngine) Reap(_ context.Context, opts sandbox.ReapOptions) ([]sandbox.Reaped, error) {
	r.reaped = append(r.reaped, opts)
	return []sandbox.Reaped{{ID: "c1", RunID: "run1", Removed: !opts.DryRun}}, r.reapErr
}

func (r *reapingEngine) PrepareImage(_ context.Context, ref string) (string, error) {
	r.prepared = append(r.prepared, ref)
	return r.prepareTo, nil
}

func (r *reapingEngine) PruneImageState(_ context.Context, dryRun bool) ([]sandbox.Reaped, error) {
	r.pruned = append(r.pruned, dryRun)
	return nil, nil
}

// Operator operations go to the backend the Service was configured with,
// whichever it is: Config.Backend builds it once, and the same backend
// then reaps and prepares images.
func TestServiceOperationsGoToTheConfiguredBackend(t *testing.T) {
	eng := &reapingEngine{prepareTo: "vol1"}
	built := 0
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, Backend: func(cfg sandboxrun.Config) (sandboxrun.Engine, error) {
		built++
		require.NotNil(t, cfg.Policy, "the backend gets the Service's policy")
		require.Equal(t, sandboxrun.DefaultMaxConcurrent, cfg.MaxConcurrent, "and its completed settings")
		return eng, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })

	out, err := svc.Reap(context.Background(), sandbox.ReapOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, []sandbox.ReapOptions{{DryRun: true}}, eng.reaped)
	require.Len(t, out.Sandboxes, 1)
	require.False(t, out.Sandboxes[0].Removed)

	vol, err := svc.PrepareImage(context.Background(), "example/img:1")
	require.NoError(t, err)
	require.Equal(t, "vol1", vol)
	require.Equal(t, []string{"example/img:1"}, eng.prepared)
	require.Equal(t, 1, built, "one backend serves every operation")

	eng.reapErr = sandbox.Unavailable("test engine unreachable")
	_, err = svc.Reap(context.Background(), sandbox.ReapOptions{})
	require.ErrorIs(t, err, sandbox.ErrUnavailable)
}

// A backend that cannot reap or keep image state is not asked to.
func TestServiceOperationsOnAPlainBackend(t *testing.T) {
	svc, _ := newService(t, sandboxrun.Config{})
	out, err := svc.Reap(context.Background(), sandbox.ReapOptions{DryRun: true})
	require.NoError(t, err)
	require.Empty(t, out.Sandboxes)
	vol, err := svc.PrepareImage(context.Background(), "example/img:1")
	require.NoError(t, err)
	require.Empty(t, vol)
}

// Without a backend a run says how to give one; refusals still need none.
func TestServiceWithoutABackend(t *testing.T) {
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	_, err = svc.RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrNoBackend)
	require.ErrorContains(t, err, "Config.Backend")
	_, err = svc.RunScript(context.Background(), "hello", "scripts/nope.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.False(t, errors.Is(err, sandboxrun.ErrNoBackend))
}

// TestUpkeepReapsDeadOwnersOnceConnected: every Service, whichever front
// end made it, reaps the sandboxes of dead owners on its upkeep ticks once
// its engine is connected, and asks an engine it never connected nothing.
func TestUpkeepReapsDeadOwnersOnceConnected(t *testing.T) {
	eng := &reapingEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, Runner: eng})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })

	sandboxrun.ReapDead(svc)
	require.Empty(t, eng.reaped, "a Service that never ran asks the engine nothing")

	_ = svc.Ready(context.Background()) // connects (and reaps once); the image is the fake's to find or not
	require.Len(t, eng.reaped, 1)
	sandboxrun.ReapDead(svc)
	require.Equal(t, []sandbox.ReapOptions{{OnlyDeadOwners: true}, {OnlyDeadOwners: true}}, eng.reaped,
		"a tick reaps dead owners only, never a live owner's sandboxes")
}
