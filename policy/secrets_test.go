package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

const secretsPolicy = `network: allowlist
secrets:
  GITHUB_TOKEN:
    from_env: SANDBOXRUN_TEST_GH
    hosts: [api.github.com]
    header: "Authorization: Bearer {value}"
  SLACK_TOKEN:
    from_env: SANDBOXRUN_TEST_GH
    hosts: [slack.com]
    basic_auth: "api:{value}"
egress:
  rules:
    - {host: api.github.com, methods: [get], paths: [/repos/acme/]}
skills:
  gh-report:
    secrets: [GITHUB_TOKEN]
    allowed_domains: [api.github.com]
    egress_rules:
      - {host: api.github.com, paths: [/repos/acme/public/]}
`

const secretValue = "ghp_unit_test_value_9f8e7d"

func TestSecretsDecide(t *testing.T) {
	t.Setenv("SANDBOXRUN_TEST_GH", secretValue)
	pol := mustPolicy(t, secretsPolicy)

	l, err := pol.Decide("gh-report", SkillLimits{Network: true, AllowedDomains: []string{"api.github.com"}, Secrets: []string{"GITHUB_TOKEN", "SLACK_TOKEN"}}, Request{})
	require.NoError(t, err)
	require.NotNil(t, l.Egress)
	require.Len(t, l.Egress.Secrets, 1)
	s := l.Egress.Secrets[0]
	require.Equal(t, "GITHUB_TOKEN", s.Name)
	require.Equal(t, "Authorization", s.Header)
	require.Equal(t, secretValue, s.Value().Reveal())
	require.Equal(t, []string{"SLACK_TOKEN"}, l.SecretsWithheld)
	require.Contains(t, l.Sources["secrets"].String(), "SLACK_TOKEN is not granted")
	require.Len(t, l.Egress.Rules, 1)
	require.Equal(t, []string{"GET"}, l.Egress.Rules[0].Methods)
	require.Len(t, l.Egress.SkillRules, 1)

	// The value never reaches what the Result and policy show print.
	for _, v := range []any{l, pol} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.NotContains(t, string(b), secretValue)
	}
	require.NotContains(t, fmt.Sprintf("%v %+v %#v %s", s, s, s, s.Value()), secretValue)
	shown := fmt.Sprint(pol.Entries())
	require.NotContains(t, shown, secretValue)
	require.Contains(t, shown, "{secrets.GITHUB_TOKEN from $SANDBOXRUN_TEST_GH to api.github.com as header Authorization: Bearer {value} line 4}")
	require.Contains(t, shown, "{skills.gh-report.secrets GITHUB_TOKEN line 16}")
	require.Contains(t, shown, "{egress.rules api.github.com methods GET paths /repos/acme/ line 13}")

	// Another skill declaring it gets nothing; without network, nothing.
	l, err = pol.Decide("other", SkillLimits{Network: true, AllowedDomains: []string{"api.github.com"}, Secrets: []string{"GITHUB_TOKEN"}}, Request{})
	require.NoError(t, err)
	require.Nil(t, l.Egress) // the operator allows it no host
	require.Equal(t, []string{"GITHUB_TOKEN"}, l.SecretsWithheld)

	// A caller narrowing the allowlist past the secret's hosts narrows
	// the secret away too.
	l, err = pol.Decide("gh-report", SkillLimits{Network: true, AllowedDomains: []string{"api.github.com", "uploads.github.com"}, Secrets: []string{"GITHUB_TOKEN"}}, Request{AllowDomains: []string{"uploads.github.com"}})
	require.NoError(t, err)
	require.Nil(t, l.Egress, "uploads.github.com is not the operator's")
	pol.Skills["gh-report"].domains = append(pol.Skills["gh-report"].domains, egressrule.DomainRule{Name: "uploads.github.com"})
	l, err = pol.Decide("gh-report", SkillLimits{Network: true, AllowedDomains: []string{"api.github.com", "uploads.github.com"}, Secrets: []string{"GITHUB_TOKEN"}}, Request{AllowDomains: []string{"uploads.github.com"}})
	require.NoError(t, err)
	require.NotNil(t, l.Egress)
	require.Empty(t, l.Egress.Secrets)
	require.Contains(t, l.Sources["secrets"].String(), "none of GITHUB_TOKEN's hosts (api.github.com) is in this run's allowlist")

	l, err = pol.Decide("gh-report", SkillLimits{Secrets: []string{"GITHUB_TOKEN"}}, Request{})
	require.NoError(t, err)
	require.Equal(t, []string{"GITHUB_TOKEN"}, l.SecretsWithheld)
	require.Contains(t, l.Sources["secrets"].String(), "needs the egress proxy")
}

func TestSecretsFromFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(f, []byte(secretValue+"\n"), 0o600))
	pol := mustPolicy(t, "secrets:\n  T:\n    from_file: "+f+"\n    hosts: [a.example.com]\n    header: \"X-Api-Key: {value}\"\n")
	require.Equal(t, secretValue, pol.Secrets["T"].value.Reveal())
}

func TestSecretsBadPolicy(t *testing.T) {
	t.Setenv("SANDBOXRUN_TEST_GH", secretValue)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("not a cert"), 0o600))
	ok := "    hosts: [api.github.com]\n    header: \"Authorization: Bearer {value}\"\n"
	tests := []struct {
		name, text, want string
	}{
		{"inline value", "secrets:\n  T:\n    value: abc\n" + ok, "`value` would put the credential in the policy file"},
		{"unknown key", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_GH\n    hots: [a.example.com]\n", "unknown key `hots`"},
		{"missing env", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_UNSET_VAR\n" + ok, "secrets.T.from_env: $SANDBOXRUN_TEST_UNSET_VAR is not set"},
		{"missing file", "secrets:\n  T:\n    from_file: /nonexistent/tok\n" + ok, "secrets.T.from_file"},
		{"both sources", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_GH\n    from_file: /x\n" + ok, "secrets.T: set exactly one of from_env"},
		{"bad host", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_GH\n    hosts: [\"https://api.github.com/\"]\n    header: \"A: {value}\"\n", "secrets.T.hosts"},
		{"no hosts", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_GH\n    header: \"A: {value}\"\n", "secrets.T.hosts: empty"},
		{"no token", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_GH\n    hosts: [a.example.com]\n    header: \"Authorization: Bearer\"\n", "secrets.T.header"},
		{"host header", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_GH\n    hosts: [a.example.com]\n    header: \"Host: {value}\"\n", "secrets.T.header"},
		{"bad basic", "secrets:\n  T:\n    from_env: SANDBOXRUN_TEST_GH\n    hosts: [a.example.com]\n    basic_auth: \"{value}\"\n", "secrets.T.basic_auth"},
		{"reserved name", "secrets:\n  PATH:\n    from_env: SANDBOXRUN_TEST_GH\n" + ok, "secrets.PATH: the name"},
		{"ungranted name", "skills:\n  s:\n    secrets: [NOPE]\n", "skills.s.secrets: \"NOPE\" is not defined"},
		{"bad rule host", "egress:\n  rules:\n    - {host: \"*\"}\n", "egress.rules[0]: host"},
		{"bad rule method", "egress:\n  rules:\n    - {host: a.example.com, methods: [FETCH]}\n", "egress.rules[0]: method \"FETCH\""},
		{"bad rule path", "egress:\n  rules:\n    - {host: a.example.com, paths: [repos]}\n", "egress.rules[0]: path \"repos\""},
		{"unknown rule key", "egress:\n  rules:\n    - {host: a.example.com, path: [/x]}\n", "unknown key `path`"},
		{"bad skill rule", "skills:\n  s:\n    egress_rules:\n      - {host: a.example.com, methods: [BREW]}\n", "skills.s.egress_rules[0]"},
		{"bad upstream ca", "egress:\n  upstream_ca: " + ca + "\n", "egress.upstream_ca: " + ca + " holds no PEM"},
		{"device upstream ca", "egress:\n  upstream_ca: /dev/zero\n", "egress.upstream_ca: /dev/zero is not a regular file"},
		{"device secret file", "secrets:\n  T:\n    from_file: /dev/stdin\n" + ok, "secrets.T.from_file: /dev/stdin is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy("p.yaml", []byte(tt.text))
			require.ErrorIs(t, err, ErrPolicyFile)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), secretValue)
		})
	}
}

func TestHTTPRuleAllows(t *testing.T) {
	r := egressrule.HTTPRule{Host: "api.github.com", Methods: []string{"get", "HEAD"}, Paths: []string{"/repos/acme/"}}
	require.NoError(t, r.Check())
	h, err := egressrule.ParseHost("API.github.com")
	require.NoError(t, err)
	require.True(t, r.Covers(h, 443))
	require.False(t, r.Covers(h, 8443))
	require.True(t, r.Allows("GET", "/repos/acme/x"))
	require.True(t, r.Allows("HEAD", "/repos/acme/"))
	require.False(t, r.Allows("POST", "/repos/acme/x"))
	require.False(t, r.Allows("GET", "/repos/other/x"))
	require.False(t, r.Allows("GET", "/repos/acme"))

	// A prefix without a trailing slash covers whole segments only.
	seg := egressrule.HTTPRule{Host: "api.github.com", Paths: []string{"/repos/acme"}}
	require.True(t, seg.Allows("GET", "/repos/acme"))
	require.True(t, seg.Allows("GET", "/repos/acme/x"))
	require.False(t, seg.Allows("GET", "/repos/acme-evil/x"))
	require.False(t, seg.Allows("GET", "/repos/acmex"))
}
