package sandboxtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The promises the run engine keeps on every backend (sandbox/engine):
// no run gets more than its host has, a caller that leaves never leaves a
// sandbox behind, and a session run and an egress run take warm sandboxes
// like a plain one (WarmEgressRuns is in egress.go).

// BeyondHost checks that a request above any host's memory or CPUs is
// refused before anything starts, in the words of sandbox.ErrBeyondHost,
// and that the backend's SpecChecker (what explain asks) refuses the same.
func BeyondHost(t *testing.T, e Env) {
	checker, ok := e.Runner.(sandbox.SpecChecker)
	require.True(t, ok, "the backend under test has no SpecChecker: explain could not refuse what its runs refuse")
	for name, edit := range map[string]func(*sandbox.Spec){
		"memory": func(s *sandbox.Spec) { s.Limits.MemoryBytes = 1 << 50 }, // 1 PiB
		"cpus":   func(s *sandbox.Spec) { s.Limits.CPUs = 4096 },
	} {
		t.Run(name, func(t *testing.T) {
			spec := e.spec(t, "print('ran')")
			edit(&spec)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := e.Runner.Run(ctx, spec)
			require.ErrorIs(t, err, sandbox.ErrBeyondHost)
			require.Nil(t, res, "nothing ran")
			require.ErrorIs(t, checker.CheckSpec(ctx, spec), sandbox.ErrBeyondHost)
			if e.Gone != nil {
				e.Gone(t, spec.RunID)
			}
		})
	}
}

// CancelledRuns cancels runs at moments from before the sandbox exists to
// mid-script, and checks that each returns its context's error and leaves
// nothing behind.
func CancelledRuns(t *testing.T, e Env) {
	for _, after := range []time.Duration{time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond, 2 * time.Second} {
		t.Run(after.String(), func(t *testing.T) {
			spec := e.spec(t, "import time\nprint('started', flush=True)\ntime.sleep(60)")
			ctx, cancel := context.WithTimeout(context.Background(), after)
			defer cancel()
			res, err := e.Runner.Run(ctx, spec)
			require.True(t, errors.Is(err, context.DeadlineExceeded), "the run ends with its context: %v", err)
			if res != nil {
				require.False(t, res.Success)
			}
			if e.Gone != nil {
				e.Gone(t, spec.RunID)
			}
		})
	}
}

// WarmRuns checks that session runs and egress runs take warm sandboxes,
// one kind after the other: Env.Warm's pool may hold one sandbox in all,
// and then keeps the session runs' until it has been idle its time, before
// the egress runs' configuration gets the room.
func WarmRuns(t *testing.T, e Env) {
	t.Run("Session", func(t *testing.T) { WarmSessionRuns(t, e) })
	if pool, ok := e.Warm.(sandbox.PoolReporter); ok && pool.PoolStats().Size < 2 {
		require.Eventually(t, func() bool { return pool.PoolStats().Ready == 0 }, 5*time.Minute, 100*time.Millisecond,
			"the session runs' warm sandbox expires")
	}
	t.Run("Egress", func(t *testing.T) { WarmEgressRuns(t, e) })
}

// WarmSessionRuns checks that runs with a writable workspace take warm
// sandboxes (Env.Warm), each seeing the workspace as it is and handing its
// changes back.
func WarmSessionRuns(t *testing.T, e Env) {
	require.NotNil(t, e.Warm, "WarmSessionRuns needs Env.Warm, a runner of the backend with a warm pool")
	spec, dir := e.writableSpec(t, `import os
n = len(os.listdir("."))
open("run-%d.txt" % n, "w").write("x")
print(n)
`, map[string]string{"seed.txt": "s"}, 16<<20)
	spec.RunID = "" // each run is named by its sandbox
	pool, ok := e.Warm.(sandbox.PoolReporter)
	require.True(t, ok, "Env.Warm reports on its pool")
	before := pool.PoolStats().Hits
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := e.Warm.Run(ctx, spec)
		cancel()
		require.NoError(t, err)
		require.True(t, res.Success, "run %d: %s %s", i, res.Stderr, res.Error)
		require.Equal(t, []string{"run-" + res.Stdout[:len(res.Stdout)-1] + ".txt"}, changedPaths(res), "run %d", i)
		require.FileExists(t, dir+"/run-"+res.Stdout[:len(res.Stdout)-1]+".txt")
		if e.Gone != nil {
			e.Gone(t, res.ID)
		}
		if i < 2 {
			require.Eventually(t, func() bool { return pool.PoolStats().Ready >= 1 }, time.Minute, 20*time.Millisecond,
				"the pool refills for a session run's configuration")
		}
	}
	require.GreaterOrEqual(t, pool.PoolStats().Hits-before, uint64(2), "the second and third session runs were warm")
}

func changedPaths(res *sandbox.Result) []string {
	var p []string
	for _, f := range res.Files {
		p = append(p, f.Path)
	}
	return p
}
