package egressrun_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// runnerFunc is a sandbox.Runner made of a function.
type runnerFunc func(context.Context, sandbox.Spec) (*sandbox.Result, error)

func (f runnerFunc) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	return f(ctx, spec)
}

func egressLimits() policy.Limits {
	l := policy.DefaultLimits()
	l.Egress = &policy.Egress{Allow: []string{"denied-anyway.example"}, MaxConnections: 4, MaxBytes: 1 << 20, IdleTimeoutSec: 5}
	return l
}

func TestEgressRunnerStartsAndStopsTheProxy(t *testing.T) {
	var socket string
	inner := runnerFunc(func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		socket = spec.EgressSocket
		require.NotEmpty(t, socket, "the run gets its proxy's socket")
		fi, err := os.Stat(socket)
		require.NoError(t, err)
		require.Equal(t, os.ModeSocket, fi.Mode().Type())
		// What a program in the sandbox would do: ask for a host.
		c, err := net.Dial("unix", socket)
		require.NoError(t, err)
		_, err = c.Write([]byte("CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"))
		require.NoError(t, err)
		buf := make([]byte, 12)
		_, err = c.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "HTTP/1.1 403", string(buf))
		c.Close()
		return &sandbox.Result{ID: spec.RunID}, nil
	})
	er := egressrun.Runner{Runner: inner, Options: []egress.Option{egress.WithDir(shortDir(t))}}
	res, err := er.Run(context.Background(), sandbox.Spec{RunID: "r1", Limits: egressLimits()})
	require.NoError(t, err)
	require.NotNil(t, res.Egress)
	require.Equal(t, int64(1), res.Egress.Denied)
	require.Equal(t, []string{"denied-anyway.example"}, res.Egress.Allowlist)
	require.Len(t, res.EgressRecord.Decisions, 1)
	require.Equal(t, "evil.example", res.EgressRecord.Decisions[0].Host)
	_, err = os.Stat(filepath.Dir(socket))
	require.ErrorIs(t, err, os.ErrNotExist, "the proxy's folder is gone after the run")

	rec := audit.NewRecord(sandbox.Spec{RunID: "r1"}, "", nil, res, nil)
	require.Same(t, res.EgressRecord, rec.Egress, "the audit record carries every decision")
}

func TestEgressRunnerPassesOtherRunsThrough(t *testing.T) {
	called := false
	inner := runnerFunc(func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		called = true
		require.Empty(t, spec.EgressSocket)
		return &sandbox.Result{}, nil
	})
	res, err := egressrun.Runner{Runner: inner}.Run(context.Background(), sandbox.Spec{Limits: policy.DefaultLimits()})
	require.NoError(t, err)
	require.True(t, called)
	require.Nil(t, res.Egress)
}

// shortDir is a folder whose path leaves room for a unix socket below it.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "eg")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestEgressRunnerStopsTheProxyOnFailure(t *testing.T) {
	dir := shortDir(t)
	boom := errors.New("engine gone")
	var named string
	inner := runnerFunc(func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		named = spec.RunID
		require.Contains(t, spec.EgressSocket, "sandboxrun-egress-"+spec.RunID+"-", "the folder is named after the run")
		return nil, boom
	})
	res, err := egressrun.Runner{Runner: inner, Options: []egress.Option{egress.WithDir(dir)}}.Run(context.Background(), sandbox.Spec{Limits: egressLimits()})
	require.NotEmpty(t, named, "a run id is made when the spec has none")
	require.ErrorIs(t, err, boom)
	require.Nil(t, res)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "nothing of the proxy is left")

	_, err = egressrun.Runner{Runner: inner, Options: []egress.Option{egress.WithDir(filepath.Join(dir, "missing"))}}.Run(context.Background(), sandbox.Spec{Limits: egressLimits()})
	require.ErrorContains(t, err, "egress proxy: create its folder")
}
