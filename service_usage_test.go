package sandboxrun_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/policy"
)

// TestServiceCountsByLabel: a caller's label is in its audit records, its
// runs count under it (not under another label, and a caller without one
// counts nothing), a quota refuses before the engine is asked, and every
// label's usage is for the operator only.
func TestServiceCountsByLabel(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath)
	require.NoError(t, err)
	pol, err := policy.ParsePolicy("p.yaml", []byte("tenants:\n  operators: [ops]\n  labels:\n    team: {quotas: [{window: 1h, runs: 1}]}\n"))
	require.NoError(t, err)
	svc, eng := newService(t, sandboxrun.Config{Audit: log, Policy: pol, UsageState: filepath.Join(t.TempDir(), "usage.json")})
	ctx := context.Background()
	team := svc.For(sandboxrun.Caller{Owner: "digest-a", Label: "team", Remote: true})

	_, err = team.RunCommand(ctx, "hello", "curl http://x", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	_, err = team.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err, "the refused run took no place of the runs quota")
	_, err = team.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{})
	var qe *sandboxrun.QuotaError
	require.ErrorAs(t, err, &qe)
	require.ErrorIs(t, err, sandboxrun.ErrQuota)
	require.Equal(t, "runs", qe.Quota)
	_, err = svc.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err, "the operator's own runs have no quota")
	require.Len(t, eng.specs, 2, "the refusals never reached the engine")

	u, err := team.Usage()
	require.NoError(t, err)
	require.Equal(t, int64(1), u.Total.Runs, "the policy refusal ran nothing and counts nothing")
	_, err = svc.For(sandboxrun.Caller{Remote: true}).Usage()
	require.ErrorIs(t, err, sandboxrun.ErrNoTenant)
	_, err = team.UsageAll()
	require.ErrorIs(t, err, sandboxrun.ErrNotOperator)
	all, err := svc.For(sandboxrun.Caller{Label: "ops", Remote: true}).UsageAll()
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, "team", all[0].Label)

	recs := readAudit(t, logPath)
	require.Len(t, recs, 3, "the policy refusal, the run and the operator's run; the quota refusal asked no policy")
	require.Equal(t, "team", recs[0].Tenant)
	require.True(t, recs[0].Refused)
	require.Equal(t, "team", recs[1].Tenant)
	require.Empty(t, recs[2].Tenant)
}
