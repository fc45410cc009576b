package sandboxrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// noHostCheck is a backend without a host check (sandbox.SpecChecker).
type noHostCheck struct{ sandboxrun.Engine }

// An explanation holds the limits against the engine's host (two CPUs
// here) with the check the run makes, locally and for a remote caller;
// where the engine cannot be asked, or the backend has no such check, it
// says so, and a remote caller is not told the engine's address.
func TestExplainAsksTheEnginesHost(t *testing.T) {
	ctx := context.Background()
	greedy := tempSkill(t, "greedy", []string{"metadata:", `  max_cpus: "4"`}, map[string]string{"scripts/g.py": "print(1)\n"})
	pol, err := policy.ParsePolicy("p.yaml", []byte("on_exceed: refuse\nlimits:\n  cpus: {max: 8}\n"))
	require.NoError(t, err)
	cfg := sandboxrun.Config{SkillRoots: []string{filepath.Dir(greedy.Dir)}, Policy: pol}
	script := sandboxrun.Action{Script: "scripts/g.py"}
	const words = "beyond what the engine's host offers: cpus 4 (max_cpus / --cpus) is above the engine host's 2 CPUs; ask for at most 2"

	t.Run("beyond the host", func(t *testing.T) {
		svc, eng := newService(t, cfg)
		eng.host = sandbox.HostCapacity{CPUs: 2}
		e, err := svc.Explain(ctx, "greedy", script, sandboxrun.Request{})
		require.ErrorIs(t, err, sandbox.ErrBeyondHost)
		require.EqualError(t, err, words)
		require.True(t, e.Host.Checked)
		r, rerr := svc.For(sandboxrun.Caller{Remote: true}).Explain(ctx, "greedy", script, sandboxrun.Request{})
		require.EqualError(t, rerr, words)
		require.True(t, r.Host.Checked)
		_, runErr := svc.RunScript(ctx, "greedy", "scripts/g.py", sandboxrun.Request{})
		require.EqualError(t, runErr, words, "the run refuses in the same words")
		require.Empty(t, eng.specs)

		e, err = svc.Explain(ctx, "greedy", script, sandboxrun.Request{CPUs: 2})
		require.NoError(t, err, "at the host's size it is allowed")
		require.Equal(t, sandboxrun.HostCheck{Checked: true}, e.Host)
	})

	t.Run("engine away", func(t *testing.T) {
		svc, eng := newService(t, cfg)
		eng.hostErr = errors.Join(sandbox.Unavailable("docker daemon unreachable"), errors.New("dial unix /secret/docker.sock: no such file"))
		e, err := svc.Explain(ctx, "greedy", script, sandboxrun.Request{})
		require.NoError(t, err, "allowed as far as the policy goes")
		require.False(t, e.Host.Checked)
		require.Contains(t, e.Host.Reason, "could not check the engine's host")
		require.ErrorIs(t, e.Host.Err, sandbox.ErrUnavailable, "the operator is told why")
		r, err := svc.For(sandboxrun.Caller{Remote: true}).Explain(ctx, "greedy", script, sandboxrun.Request{})
		require.NoError(t, err)
		require.False(t, r.Host.Checked)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		require.Contains(t, string(b), `"host":{"checked":false,"reason":"could not check the engine's host`)
		require.NotContains(t, string(b), "/secret", "a remote caller is not told the engine's address")
	})

	t.Run("engine without an answer", func(t *testing.T) {
		svc, eng := newService(t, cfg)
		eng.hostErr = errors.New("ask the engine about its host: 500 Internal Server Error")
		e, err := svc.Explain(ctx, "greedy", script, sandboxrun.Request{})
		require.NoError(t, err)
		require.False(t, e.Host.Checked)
		require.Contains(t, e.Host.Reason, "the engine did not tell")
		require.Equal(t, eng.hostErr, e.Host.Err)
	})

	t.Run("refused before the host", func(t *testing.T) {
		svc, _ := newService(t, cfg)
		e, err := svc.Explain(ctx, "greedy", script, sandboxrun.Request{CPUs: 16})
		require.ErrorIs(t, err, sandboxrun.ErrRefused)
		require.False(t, e.Host.Checked)
		require.Contains(t, e.Host.Reason, "refused before")
	})

	t.Run("backend without a host check", func(t *testing.T) {
		eng := &fakeEngine{}
		c := cfg
		c.Runner = noHostCheck{eng}
		svc, err := sandboxrun.New(c)
		require.NoError(t, err)
		e, err := svc.Explain(ctx, "greedy", script, sandboxrun.Request{})
		require.NoError(t, err)
		require.Equal(t, sandboxrun.HostCheck{Reason: "not checked: this backend makes no host check before a run"}, e.Host)
	})

	t.Run("no backend", func(t *testing.T) {
		svc, err := sandboxrun.New(cfg)
		require.NoError(t, err)
		e, err := svc.Explain(ctx, "greedy", script, sandboxrun.Request{})
		require.NoError(t, err)
		require.False(t, e.Host.Checked)
		require.Contains(t, e.Host.Reason, "no backend")
	})
}

// isolationEngine proves its isolation, as the Kubernetes backend does,
// and tells how the proof stands.
type isolationEngine struct{ *fakeEngine }

func (isolationEngine) IsolationReport() string {
	return "proven 2026-11-29T07:00:00Z: an enforced deny-all NetworkPolicy (interfaces eth0, lo; 10.96.0.10:53 refused ...)"
}

// An explanation of a run without network tells the operator how its
// isolation was proven; a remote caller is not told the cluster's
// addresses.
func TestExplainTellsTheIsolationProof(t *testing.T) {
	ctx := context.Background()
	sk := tempSkill(t, "quiet", nil, map[string]string{"scripts/q.py": "print(1)\n"})
	cfg := sandboxrun.Config{SkillRoots: []string{filepath.Dir(sk.Dir)}, Runner: isolationEngine{&fakeEngine{}}}
	svc, err := sandboxrun.New(cfg)
	require.NoError(t, err)
	script := sandboxrun.Action{Script: "scripts/q.py"}
	e, err := svc.Explain(ctx, "quiet", script, sandboxrun.Request{})
	require.NoError(t, err)
	require.True(t, e.Host.Checked)
	require.Contains(t, e.Host.Isolation, "an enforced deny-all NetworkPolicy")
	r, err := svc.For(sandboxrun.Caller{Remote: true}).Explain(ctx, "quiet", script, sandboxrun.Request{})
	require.NoError(t, err)
	require.Empty(t, r.Host.Isolation)
}
