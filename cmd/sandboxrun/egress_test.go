package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestAllowDomainFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--allow-domain", "a.example.com"}, []string{"a.example.com"}},
		{[]string{"--allow-domain", "a.example.com,*.b.example.com:8443", "--allow-domain", "c.example.com"}, []string{"a.example.com", "*.b.example.com:8443", "c.example.com"}},
	} {
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		f := &execFlags{}
		f.register(fs, true, "")
		require.NoError(t, fs.Parse(tt.args))
		req, err := f.request(bytes.NewReader(nil), policy.BuiltinPolicy())
		require.NoError(t, err)
		require.Equal(t, tt.want, req.AllowDomains)
	}
}

func TestPolicyCheckShowsTheAllowlist(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "fetcher", "name: fetcher\ndescription: fetches\nmetadata:\n  network_access: \"true\"\n  allowed_domains: \"api.example.com evil.example.net\"", "Body.\n", nil)
	pol := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("network: allowlist\nallowed_domains: [\"*.example.com\"]\negress:\n  allow_cidrs: [10.0.0.0/8]\n"), 0o644))
	r := cli(t, "", "--skills", root, "--policy", pol, "policy", "check", "fetcher")
	r.requireCode(t, 0)
	require.Regexp(t, `network\s+allowlist: api.example.com \(non-public addresses in 10.0.0.0/8\)\s+allowlist through the egress proxy`, r.stdout)

	r = cli(t, "", "--policy", pol, "policy", "show")
	r.requireCode(t, 0)
	require.Regexp(t, `allowed_domains\s+\*.example.com\s+line 2`, r.stdout)
	require.Regexp(t, `egress.allow_cidrs\s+10.0.0.0/8\s+line 4`, r.stdout)
}

func TestExplainEgress(t *testing.T) {
	var b bytes.Buffer
	explain(&b, &sandbox.Result{Egress: &egresslog.Summary{Denied: 2, LimitsHit: []string{"bytes"},
		Hosts: []egresslog.HostStats{{Host: "evil.example", Port: 443, Denied: 2, Reason: "not in this run's allowlist"}}}})
	require.Contains(t, b.String(), "egress proxy denied 2 request(s): evil.example:443 (not in this run's allowlist)")
	require.Contains(t, b.String(), "egress limits reached: bytes")
}

func TestPolicyCheckShowsTheSecrets(t *testing.T) {
	isolateEnv(t)
	t.Setenv("SANDBOXRUN_TEST_TOKEN", "cmd-test-secret-value")
	root := t.TempDir()
	writeSkill(t, root, "gh", "name: gh\ndescription: calls an API\nmetadata:\n  network_access: \"true\"\n  allowed_domains: \"api.github.com\"\n  secrets: \"GITHUB_TOKEN SLACK_TOKEN\"", "Body.\n", nil)
	pol := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("network: allowlist\nsecrets:\n  GITHUB_TOKEN: {from_env: SANDBOXRUN_TEST_TOKEN, hosts: [api.github.com], header: \"Authorization: Bearer {value}\"}\nskills:\n  gh:\n    secrets: [GITHUB_TOKEN]\n    allowed_domains: [api.github.com]\n"), 0o644))
	r := cli(t, "", "--skills", root, "--policy", pol, "policy", "check", "gh")
	r.requireCode(t, 0)
	require.Regexp(t, `secrets\s+1 granted, 1 withheld\s+granted: GITHUB_TOKEN; withheld: SLACK_TOKEN is not granted`, r.stdout)
	r = cli(t, "", "--policy", pol, "policy", "show")
	r.requireCode(t, 0)
	require.Regexp(t, `secrets.GITHUB_TOKEN\s+from \$SANDBOXRUN_TEST_TOKEN to api.github.com as header Authorization: Bearer \{value\}`, r.stdout)
	require.NotContains(t, r.stdout+r.stderr, "cmd-test-secret-value")
}
