package sandboxrun_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestEgressRunnerGivesPlaceholdersAndTheCA(t *testing.T) {
	const value = "root-package-secret-value-42"
	l := egressLimits()
	l.Egress.Secrets = []policy.EgressSecret{policy.NewEgressSecret("API_KEY", []string{"denied-anyway.example"}, "X-Api-Key: {value}", false, policy.NewSecretValue(value))}
	var seen sandbox.Spec
	inner := runnerFunc(func(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
		seen = spec
		b, err := os.ReadFile(spec.EgressCA)
		require.NoError(t, err)
		require.Contains(t, string(b), "BEGIN CERTIFICATE")
		require.NotContains(t, string(b), "PRIVATE KEY")
		return &sandbox.Result{ID: spec.RunID}, nil
	})
	er := sandboxrun.EgressRunner{Runner: inner, Options: []egress.Option{egress.WithDir(shortDir(t))}}
	spec := sandbox.Spec{RunID: "r1", Limits: l, Env: map[string]string{"OTHER": "x"}}
	_, err := er.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(seen.Env["API_KEY"], egress.PlaceholderPrefix))
	require.Equal(t, "x", seen.Env["OTHER"])
	require.NotContains(t, spec.Env, "API_KEY", "the caller's map is not changed")
	for _, v := range sandbox.ScriptEnv(&seen, "test") {
		require.NotContains(t, v, value)
	}
	require.Contains(t, sandbox.ScriptEnv(&seen, "test"), "SSL_CERT_FILE="+sandbox.EgressCAPath)

	// A caller cannot set the secret's variable.
	spec.Env["API_KEY"] = "mine"
	_, err = er.Run(context.Background(), spec)
	require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
	require.ErrorContains(t, err, "Env sets API_KEY")
}
