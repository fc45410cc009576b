//go:build integration

package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsageAgainstServer: Usage is the sum of the caller's Results, a run
// past the token's runs quota is ErrBusy naming the quota with a
// RetryAfter, and UsageAll is for the policy's operators only.
func TestUsageAgainstServer(t *testing.T) {
	const opsToken = "go-client-ops-token-0123456789"
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	writeSkill(t, root, "goclient-usage", "", map[string]string{"burn.py": "import time\nend = time.process_time() + 0.05\nwhile time.process_time() < end:\n    pass\n"})
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("team-go "+testToken+"\nops "+opsToken+"\n"), 0o600))
	policy := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("tenants:\n  operators: [ops]\n  labels:\n    team-go: {quotas: [{window: 24h, runs: 2}]}\n"), 0o600))
	srv := startServer(t, true, "", nil, "--skills", root, "--tokens", tokens, "--policy", policy, "--warm-pool", "0")

	ctx := context.Background()
	c, err := New(srv.url, WithToken(testToken))
	require.NoError(t, err)
	var cpu int64
	for range 2 {
		res, err := c.Run(ctx, "goclient-usage", RunRequest{Script: "scripts/burn.py"})
		require.NoError(t, err)
		cpu += res.CPUTimeMS
	}
	_, err = c.Run(ctx, "goclient-usage", RunRequest{Script: "scripts/burn.py"})
	var e *Error
	require.ErrorAs(t, err, &e)
	require.True(t, errors.Is(err, ErrBusy))
	require.Contains(t, e.Message, "quota runs per 24h")
	require.Positive(t, e.RetryAfter)

	u, err := c.Usage(ctx)
	require.NoError(t, err)
	require.Equal(t, "team-go", u.Label)
	require.Equal(t, int64(2), u.Total.Runs)
	require.Equal(t, cpu, u.Total.CPUTimeMS)
	day := u.Windows[len(u.Windows)-1]
	require.Equal(t, "24h0m0s", day.Window)
	require.Equal(t, int64(2), day.Limits.Runs)

	_, err = c.UsageAll(ctx)
	require.ErrorIs(t, err, ErrRefused)
	ops, err := New(srv.url, WithToken(opsToken))
	require.NoError(t, err)
	all, err := ops.UsageAll(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, "team-go", all[0].Label)
}
