package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTenantRules(t *testing.T) {
	o, err := ParsePolicy("p.yaml", []byte(`tenants:
  operators: [ops]
  default:
    max_running: 2
    quotas:
      - {window: 1h, runs: 5, cpu_seconds: 10}
    stored_bytes: 1Gi
  labels:
    ci: {max_queued: 1, quotas: [{window: 2s, runs: 1, egress_bytes: 1Mi}]}
    docs: {stored_bytes: 1Mi}
`))
	require.NoError(t, err)
	r := &o.Tenants
	require.True(t, r.FairShareOn(), "fair share is on unless the file says otherwise")
	require.True(t, r.IsOperator("ops"))
	require.False(t, r.IsOperator("ci"))
	require.False(t, r.IsOperator(""))
	require.Equal(t, Share{MaxRunning: 2, Quotas: []Quota{{Window: Duration(time.Hour), Runs: 5, CPUSeconds: 10}}, StoredBytes: 1 << 30}, r.For("team"))
	ci := r.For("ci")
	require.Equal(t, 2, ci.MaxRunning, "a label's entry keeps the default's values it does not set")
	require.Equal(t, 1, ci.MaxQueued)
	require.Equal(t, []Quota{{Window: Duration(2 * time.Second), Runs: 1, EgressBytes: 1 << 20}}, ci.Quotas, "quotas replace the default's as a list")
	require.Equal(t, int64(1<<30), ci.StoredBytes, "stored_bytes is the default's unless the label sets it")
	require.Equal(t, int64(1<<20), r.For("docs").StoredBytes)
	require.Equal(t, []time.Duration{2 * time.Second, time.Hour, 24 * time.Hour}, r.UsageWindows())

	off, err := ParsePolicy("p.yaml", []byte("tenants:\n  fair_share: false\n"))
	require.NoError(t, err)
	require.False(t, off.Tenants.FairShareOn())
	require.True(t, BuiltinPolicy().Tenants.FairShareOn())
}

func TestTenantRulesRefuse(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown key", "tenants:\n  fairshare: true\n", `unknown key "fairshare"`},
		{"unknown share key", "tenants:\n  default: {max_runs: 1}\n", `unknown key "max_runs"`},
		{"unknown quota key", "tenants:\n  default: {quotas: [{window: 1h, cpu: 1}]}\n", `unknown key "cpu"`},
		{"bad label", "tenants:\n  labels:\n    Team_A: {max_running: 1}\n", `label "Team_A"`},
		{"bad operator", "tenants:\n  operators: [\"a b\"]\n", `tenants.operators: label "a b"`},
		{"short window", "tenants:\n  default: {quotas: [{window: 500ms, runs: 1}]}\n", "give one of at least 1s"},
		{"window twice", "tenants:\n  default: {quotas: [{window: 1h, runs: 1}, {window: 1h, cpu_seconds: 1}]}\n", "given twice"},
		{"bounds nothing", "tenants:\n  labels:\n    ci: {quotas: [{window: 1h}]}\n", "tenants.labels.ci.quotas[0]: bounds nothing"},
		{"negative", "tenants:\n  default: {quotas: [{window: 1h, runs: -1}]}\n", "a negative limit"},
		{"stored bytes not a size", "tenants:\n  default: {stored_bytes: lots}\n", "lots"},
		{"zero cap", "tenants:\n  default: {max_running: 0}\n", `"0" is not a whole number above 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy("p.yaml", []byte(tt.yaml))
			require.ErrorContains(t, err, tt.want)
		})
	}
	// A nested setting's error names its own line, once.
	_, err := ParsePolicy("p.yaml", []byte("tenants:\n  default:\n    max_running: -3\n"))
	require.ErrorContains(t, err, `tenants: line 3: "-3" is not a whole number above 0`)
	require.Equal(t, 1, strings.Count(err.Error(), "line "), err.Error())
}
