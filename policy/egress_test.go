package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

const allowlistText = `network: allowlist
allowed_domains: ["*.example.com", "pypi.org:443"]
egress:
  allow_cidrs: [127.0.0.1, 10.0.0.0/8]
  max_connections: 10
  max_bytes: 5Mi
  idle_timeout: 15s
skills:
  weather:
    allowed_domains: [api.weather.gov]
  offline:
    network: none
  open:
    network: declared
`

func TestDecideNetwork(t *testing.T) {
	allowlist := mustPolicy(t, allowlistText)
	declared := BuiltinPolicy()
	none := mustPolicy(t, "network: none\nskills:\n  s:\n    network: allowlist\n    allowed_domains: [a.example.com]\n")
	tests := []struct {
		name    string
		pol     *Operator
		skill   string
		domains []string
		network bool
		caller  []string
		full    bool
		allow   []string // nil: no egress proxy
		source  string
	}{
		{"declared, no hosts named: full network", declared, "s", nil, true, nil, true, nil, "full network"},
		{"declared, hosts named: only those", declared, "s", []string{"a.example.com", "b.example.com:8443"}, true, nil, false, []string{"a.example.com", "b.example.com:8443"}, "skill allowed_domains"},
		{"declared, caller narrows a full network", declared, "s", nil, true, []string{"x.example.com"}, false, []string{"x.example.com"}, "--allow-domain"},
		{"declared, caller narrows the skill's", declared, "s", []string{"a.example.com", "b.example.com"}, true, []string{"b.example.com:443", "c.example.com"}, false, []string{"b.example.com:443"}, "skill allowed_domains ∩ --allow-domain"},
		{"declared, no network_access", declared, "s", []string{"a.example.com"}, false, nil, false, nil, "no network_access"},
		{"allowlist: skill ∩ operator", allowlist, "s", []string{"api.example.com", "evil.com", "pypi.org"}, true, nil, false, []string{"api.example.com", "pypi.org:443"}, "skill allowed_domains ∩ policy allowed_domains (line 2)"},
		{"allowlist: skill names nothing", allowlist, "s", nil, true, nil, false, nil, "off: the allowlist is empty"},
		{"allowlist: nothing in common", allowlist, "s", []string{"evil.com"}, true, nil, false, nil, "off: the allowlist is empty"},
		{"allowlist: the skill's grant adds", allowlist, "weather", []string{"api.weather.gov", "x.example.com"}, true, nil, false, []string{"api.weather.gov", "x.example.com"}, "skills.weather.allowed_domains (line 10)"},
		{"allowlist: a grant is the skill's alone", allowlist, "s", []string{"api.weather.gov"}, true, nil, false, nil, "off"},
		{"allowlist: caller never widens", allowlist, "s", []string{"a.example.com"}, true, []string{"a.example.com", "evil.com", "*.example.com"}, false, []string{"a.example.com"}, "--allow-domain"},
		{"allowlist: caller disjoint", allowlist, "s", []string{"a.example.com"}, true, []string{"evil.com"}, false, nil, "off"},
		{"allowlist: per-skill none", allowlist, "offline", []string{"a.example.com"}, true, nil, false, nil, "skills.offline.network (line 12) is none"},
		{"allowlist: per-skill declared", allowlist, "open", nil, true, nil, true, nil, "full network"},
		{"none: hosts named", none, "x", []string{"a.example.com"}, true, nil, false, nil, "is none"},
		{"none: per-skill allowlist", none, "s", []string{"a.example.com", "b.example.com"}, true, nil, false, []string{"a.example.com"}, "allowlist through the egress proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.pol.Decide(tt.skill, SkillLimits{Network: tt.network, AllowedDomains: tt.domains}, Request{AllowDomains: tt.caller})
			require.NoError(t, err)
			require.Equal(t, tt.full, l.Network)
			require.Contains(t, l.Sources["network"].String(), tt.source)
			if tt.allow == nil {
				require.Nil(t, l.Egress, "no proxy: %+v", l.Egress)
				return
			}
			require.NotNil(t, l.Egress, l.Sources["network"].String())
			require.False(t, l.Network, "an allowlist never comes with a full network")
			require.Equal(t, tt.allow, l.Egress.Allow)
		})
	}
}

func TestDecideEgressLimits(t *testing.T) {
	l, err := mustPolicy(t, allowlistText).Decide("s", SkillLimits{Network: true, AllowedDomains: []string{"a.example.com"}}, Request{})
	require.NoError(t, err)
	require.Equal(t, &Egress{
		Allow: []string{"a.example.com"}, AllowCIDRs: []string{"127.0.0.1/32", "10.0.0.0/8"},
		MaxConnections: 10, MaxBytes: 5 << 20, IdleTimeout: 15 * time.Second, IdleTimeoutSec: 15,
	}, l.Egress)

	l, err = BuiltinPolicy().Decide("s", SkillLimits{Network: true, AllowedDomains: []string{"a.example.com"}}, Request{})
	require.NoError(t, err)
	require.Equal(t, &Egress{
		Allow: []string{"a.example.com"}, MaxConnections: DefaultEgressConnections, MaxBytes: DefaultEgressBytes,
		IdleTimeout: DefaultEgressIdle, IdleTimeoutSec: DefaultEgressIdle.Seconds(),
	}, l.Egress)
}

func TestDecideRefusesBadAllowDomains(t *testing.T) {
	_, err := BuiltinPolicy().Decide("s", SkillLimits{Network: true}, Request{AllowDomains: []string{"ok.example.com", "*.com"}})
	require.ErrorIs(t, err, egressrule.ErrDomain)
	require.ErrorContains(t, err, "top-level domain")
	_, err = BuiltinPolicy().Decide("s", SkillLimits{Network: true}, Request{AllowDomains: []string{}})
	require.ErrorContains(t, err, "requested allowlist is empty")
}

func TestPolicyEgressErrorsNameTheLine(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"bad domain", "allowed_domains: [\"*.com\"]\n", "line 1: allowed_domains"},
		{"bad skill domain", "skills:\n  s:\n    allowed_domains: [a..com]\n", "line 3: skills.s.allowed_domains"},
		{"bad cidr", "egress:\n  allow_cidrs: [10.0.0.1/8]\n", "line 2: egress.allow_cidrs: \"10.0.0.1/8\" has host bits set; write 10.0.0.0/8"},
		{"open cidr", "egress:\n  allow_cidrs: [0.0.0.0/0]\n", "line 2: egress.allow_cidrs"},
		{"bad size", "egress:\n  max_bytes: 100\n", "line 2"},
		{"unknown key", "egress:\n  allow_hosts: [a]\n", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy("p.yaml", []byte(tt.text))
			require.ErrorIs(t, err, ErrPolicyFile)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestEntriesShowTheAllowlist(t *testing.T) {
	got := map[string]Entry{}
	for _, e := range mustPolicy(t, allowlistText).Entries() {
		got[e.Key] = e
	}
	require.Equal(t, Entry{"network", "allowlist", "line 1"}, got["network"])
	require.Equal(t, Entry{"allowed_domains", "*.example.com, pypi.org:443", "line 2"}, got["allowed_domains"])
	require.Equal(t, Entry{"egress.allow_cidrs", "127.0.0.1, 10.0.0.0/8", "line 4"}, got["egress.allow_cidrs"])
	require.Equal(t, Entry{"egress.max_connections", "10", "line 5"}, got["egress.max_connections"])
	require.Equal(t, Entry{"egress.idle_timeout", "15s", "line 7"}, got["egress.idle_timeout"])
	require.Equal(t, Entry{"skills.weather.allowed_domains", "api.weather.gov", "line 10"}, got["skills.weather.allowed_domains"])

	builtin := map[string]Entry{}
	for _, e := range BuiltinPolicy().Entries() {
		builtin[e.Key] = e
	}
	require.Equal(t, Entry{"allowed_domains", "none", "builtin default"}, builtin["allowed_domains"])
	require.Equal(t, Entry{"egress.max_bytes", "1GiB", "builtin default"}, builtin["egress.max_bytes"])
}
