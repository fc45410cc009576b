package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/server"
)

// cpuEngine is engine with Results that used CPU for a known time.
type cpuEngine struct{ engine }

func (e *cpuEngine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	res, err := e.engine.Run(ctx, spec)
	if res != nil {
		res.CPUTimeMS, res.DurationMS = 250, 1000
	}
	return res, err
}

const tokenOps = "token-ops-0123456789abcdef"

const tenantsPolicy = `
tenants:
  operators: [ops]
  default:
    quotas:
      - {window: 1h, runs: 2}
`

func startTenants(t *testing.T) (string, *server.Metrics) {
	t.Helper()
	pol, err := policy.ParsePolicy("p.yaml", []byte(tenantsPolicy))
	require.NoError(t, err)
	metrics := server.NewMetrics()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &cpuEngine{}, Policy: pol, Observer: metrics})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	tokens := server.NewLabelledTokens(map[string]string{"team-a": tokenA, "ops": tokenOps})
	srv, err := server.New(server.Options{Service: svc, Tokens: tokens})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, metrics
}

// TestUsageAndQuotaOverHTTP: a token's runs count under its label; the
// run past its runs quota is refused with 429, Retry-After and the quota's
// name; GET /v1/usage shows the caller's own figures, the operator's
// token every label's, and the metrics count by label, never by token.
func TestUsageAndQuotaOverHTTP(t *testing.T) {
	url, _ := startTenants(t)
	for range 2 {
		r := call(t, "POST", url+"/v1/skills/hello/run", `{"script": "scripts/echo.py"}`, as(tokenA)...)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}
	r := call(t, "POST", url+"/v1/skills/hello/run", `{"script": "scripts/echo.py"}`, as(tokenA)...)
	require.Equal(t, http.StatusTooManyRequests, r.status, string(r.body))
	require.Contains(t, string(r.body), "quota runs per 1h0m0s")
	wait, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Greater(t, wait, 0)
	require.LessOrEqual(t, wait, 3600)

	r = call(t, "GET", url+"/v1/usage", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.NoError(t, checkSchema("Usage", r.body), "the answer is the documented one")
	var own sandboxrun.TenantUsage
	require.NoError(t, json.Unmarshal(r.body, &own))
	require.Equal(t, "team-a", own.Label)
	require.Equal(t, int64(2), own.Total.Runs)
	require.Equal(t, int64(500), own.Total.CPUTimeMS)
	require.InDelta(t, 0.25, own.Total.MemoryGiBSeconds, 1e-9, "the skill's 128Mi for 1s, twice")
	require.Len(t, own.Windows, 2, "an hour and a day")
	require.Equal(t, int64(2), own.Windows[0].Used.Runs)
	require.NotNil(t, own.Windows[0].Limits)
	require.Equal(t, int64(2), own.Windows[0].Limits.Runs)
	require.NotContains(t, string(r.body), tokenA)

	r = call(t, "GET", url+"/v1/usage?all=true", "", as(tokenA)...)
	require.Equal(t, http.StatusForbidden, r.status, "a tenant reads no other tenant's usage")
	r = call(t, "GET", url+"/v1/usage?all=true", "", as(tokenOps)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.NoError(t, checkSchema("UsageAll", r.body))
	var all struct{ Tenants []sandboxrun.TenantUsage }
	require.NoError(t, json.Unmarshal(r.body, &all))
	require.Len(t, all.Tenants, 1, "ops ran nothing")
	require.Equal(t, "team-a", all.Tenants[0].Label)

	page := metricsAs(t, url, tokenOps)
	require.Contains(t, page, `sandboxrun_tenant_runs_total{tenant="team-a"} 2`)
	require.Contains(t, page, `sandboxrun_tenant_cpu_seconds_total{tenant="team-a"} 0.5`)
	require.Contains(t, page, `sandboxrun_tenant_refused_total{reason="runs",tenant="team-a"} 1`)
	require.NotContains(t, page, tokenA)
}

func TestUsageNeedsAToken(t *testing.T) {
	f := start(t, nil, server.Options{})
	r := call(t, "GET", f.url+"/v1/usage", "")
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
	require.Contains(t, string(r.body), "--tokens")
}

func TestLoadTokensLabels(t *testing.T) {
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "tokens")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	toks, err := server.LoadTokens(write("# team tokens\nteam-a " + tokenA + "\n" + tokenB + "\n"))
	require.NoError(t, err)
	require.False(t, toks.Empty())
	label := server.TokenLabel(tokenB)
	require.Regexp(t, `^token-[0-9a-f]{8}$`, label)
	require.NotContains(t, tokenB, strings.TrimPrefix(label, "token-"), "the label is the digest's, not the token's")
	require.Equal(t, label, server.TokenLabel(tokenB), "stable")

	tests := []struct{ name, body, want string }{
		{"bad label", "Team_A! " + tokenA, "line 1: label"},
		{"label twice", "a " + tokenA + "\na " + tokenB, "line 2: label \"a\" is already line 1's"},
		{"three fields", "a b " + tokenA, "line 1: expected a token"},
		{"short token", "a short", "line 1: token is 5 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := server.LoadTokens(write(tt.body))
			require.ErrorContains(t, err, tt.want)
		})
	}
}
