package egressrule

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseHost(t *testing.T) {
	good := []struct{ in, want string }{
		{"example.com", "example.com"},
		{"Example.COM.", "example.com"},
		{"a-b.x1.example", "a-b.x1.example"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"localhost", "localhost"},
		{"127.0.0.1", "127.0.0.1"},
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"[::ffff:127.0.0.1]", "127.0.0.1"},
		{"1.example.2com", "1.example.2com"},
		{strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com"},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			h, err := ParseHost(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, h.String())
		})
	}
	bad := []struct{ in, why string }{
		{"", "empty"},
		{".", "not a host name"},
		{"example..com", "empty label"},
		{".example.com", "empty label"},
		{"example.com..", "empty label"},
		{"-a.com", "starts or ends with '-'"},
		{"a-.com", "starts or ends with '-'"},
		{"a_b.com", "has '_'"},
		{"exa mple.com", "has ' '"},
		{"bücher.example", "xn--"},
		{"a.com/evil", "has '/'"},
		{"a.com@b.com", "has '@'"},
		{"a.com%2f", "has '%'"},
		{"127.1", "ends in a number"},
		{"2130706433", "ends in a number"},
		{"0x7f.1", "ends in a number"},
		{"0x7f000001", "ends in a number"},
		{"a.0x", "ends in a number"},
		{"127.0.0.1.", "ends in a number"},
		{"[::1", "unclosed"},
		{"fe80::1%eth0", "IPv6"},
		{"[1.2.3.4]", "IPv6"},
		{strings.Repeat("a", 64) + ".com", "longer than 63"},
		{strings.Repeat("a.", 127) + "com", "1 to 253"},
	}
	for _, tt := range bad {
		t.Run("refuse "+tt.in, func(t *testing.T) {
			_, err := ParseHost(tt.in)
			require.ErrorIs(t, err, ErrDomain)
			require.ErrorContains(t, err, tt.why)
		})
	}
}

func TestParseDomainRule(t *testing.T) {
	good := []struct {
		in, want string
		ports    []uint16
	}{
		{"api.example.com", "api.example.com", []uint16{80, 443}},
		{" API.Example.com. ", "api.example.com", []uint16{80, 443}},
		{"api.example.com:8443", "api.example.com:8443", []uint16{8443}},
		{"*.example.com", "*.example.com", []uint16{80, 443}},
		{"*.Example.com.:443", "*.example.com:443", []uint16{443}},
		{"127.0.0.1:8080", "127.0.0.1:8080", []uint16{8080}},
		{"[::1]:443", "[::1]:443", []uint16{443}},
		{"[2001:db8::1]", "[2001:db8::1]", []uint16{80, 443}},
		{"localhost:3000", "localhost:3000", []uint16{3000}},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseDomainRule(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, r.String())
			require.Equal(t, tt.ports, r.Ports())
			back, err := ParseDomainRule(r.String())
			require.NoError(t, err)
			require.Equal(t, r, back)
		})
	}
	bad := []struct{ in, why string }{
		{"", "has no host"},
		{"*", "'*' may only be the whole first label"},
		{"*.com", "top-level domain"},
		{"*.", "not a host name"},
		{"a.*.com", "'*' may only be the whole first label"},
		{"*a.com", "'*' may only be the whole first label"},
		{"**.a.com", "'*' may only be the whole first label"},
		{"a.com:", "empty port"},
		{"a.com:0", "not a number from 1 to 65535"},
		{"a.com:65536", "not a number from 1 to 65535"},
		{"a.com:+80", "not a number from 1 to 65535"},
		{"a.com:80:81", "brackets"},
		{"::1", "brackets"},
		{"[::1]80", "expected :PORT"},
		{":443", "no host"},
		{"https://a.com", "without a scheme"},
		{"a.com/path", "has '/'"},
	}
	for _, tt := range bad {
		t.Run("refuse "+tt.in, func(t *testing.T) {
			_, err := ParseDomainRule(tt.in)
			require.ErrorIs(t, err, ErrDomain)
			require.ErrorContains(t, err, tt.why)
		})
	}
}

func mustHost(t *testing.T, s string) Host {
	t.Helper()
	h, err := ParseHost(s)
	require.NoError(t, err)
	return h
}

func mustList(t *testing.T, entries ...string) Allowlist {
	t.Helper()
	l, err := ParseAllowlist(entries)
	require.NoError(t, err)
	return l
}

func TestAllowlistMatch(t *testing.T) {
	l := mustList(t, "api.example.com", "*.cdn.example.net:443", "10.1.2.3:8080", "[::1]:9000")
	tests := []struct {
		host string
		port uint16
		want bool
	}{
		{"api.example.com", 443, true},
		{"API.example.com.", 80, true},
		{"api.example.com", 8443, false},
		{"example.com", 443, false},
		{"x.api.example.com", 443, false},
		{"evilapi.example.com", 443, false},
		{"a.cdn.example.net", 443, true},
		{"a.b.cdn.example.net", 443, true},
		{"cdn.example.net", 443, false},
		{"a.cdn.example.net", 80, false},
		{"xcdn.example.net", 443, false},
		{"10.1.2.3", 8080, true},
		{"10.1.2.3", 80, false},
		{"::1", 9000, true},
		{"::ffff:10.1.2.3", 8080, true},
		{"api.example.com.evil.com", 443, false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			require.Equal(t, tt.want, l.Match(mustHost(t, tt.host), tt.port))
		})
	}
}

func TestAllowlistIntersect(t *testing.T) {
	tests := []struct {
		name string
		a, b []string
		want []string
	}{
		{"same", []string{"a.example.com"}, []string{"a.example.com"}, []string{"a.example.com"}},
		{"disjoint", []string{"a.example.com"}, []string{"b.example.com"}, []string{}},
		{"wildcard narrows to exact", []string{"*.example.com"}, []string{"api.example.com"}, []string{"api.example.com"}},
		{"exact within wildcard either side", []string{"api.example.com"}, []string{"*.example.com"}, []string{"api.example.com"}},
		{"wildcard apex not included", []string{"*.example.com"}, []string{"example.com"}, []string{}},
		{"nested wildcards", []string{"*.example.com"}, []string{"*.eu.example.com"}, []string{"*.eu.example.com"}},
		{"sibling wildcards", []string{"*.a.example.com"}, []string{"*.b.example.com"}, []string{}},
		{"default ports narrow to one", []string{"a.example.com"}, []string{"a.example.com:443"}, []string{"a.example.com:443"}},
		{"odd port outside defaults", []string{"a.example.com"}, []string{"a.example.com:8443"}, []string{}},
		{"same odd port", []string{"a.example.com:8443"}, []string{"*.example.com:8443"}, []string{"a.example.com:8443"}},
		{"ip literal", []string{"127.0.0.1:8080"}, []string{"127.0.0.1:8080", "localhost:8080"}, []string{"127.0.0.1:8080"}},
		{"ip never matches a name", []string{"127.0.0.1"}, []string{"*.example.com"}, []string{}},
		{"subsumed entries dropped", []string{"*.example.com", "a.example.com"}, []string{"*.example.com", "a.example.com:443"}, []string{"*.example.com"}},
		{"empty side", []string{"a.example.com"}, nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := mustList(t, tt.a...), mustList(t, tt.b...)
			require.Equal(t, tt.want, a.Intersect(b).Strings())
			require.Equal(t, tt.want, b.Intersect(a).Strings(), "intersection is symmetric")
		})
	}
}

// The intersection allows a host exactly when both sides do: checked over
// every probe host and port, for pairs of lists.
func TestAllowlistIntersectAgreesWithMatch(t *testing.T) {
	entries := []string{"example.com", "a.example.com", "*.example.com", "*.a.example.com", "b.a.example.com:443",
		"*.example.com:8443", "other.net", "10.0.0.1", "10.0.0.1:8080", "[::1]:443"}
	probes := []string{"example.com", "a.example.com", "b.a.example.com", "c.b.a.example.com", "x.example.com",
		"other.net", "x.other.net", "10.0.0.1", "::1", "10.0.0.2"}
	ports := []uint16{80, 443, 8080, 8443}
	for i := range entries {
		for j := range entries {
			a, b := mustList(t, entries[i], entries[(i+3)%len(entries)]), mustList(t, entries[j])
			both := a.Intersect(b)
			for _, p := range probes {
				h := mustHost(t, p)
				for _, port := range ports {
					require.Equal(t, a.Match(h, port) && b.Match(h, port), both.Match(h, port),
						"%v ∩ %v = %v on %s:%d", a.Strings(), b.Strings(), both.Strings(), p, port)
				}
			}
		}
	}
}

func TestParseCIDR(t *testing.T) {
	good := map[string]string{
		"10.0.0.0/8": "10.0.0.0/8", "127.0.0.1": "127.0.0.1/32", "::1": "::1/128",
		"fd00::/8": "fd00::/8", " 169.254.169.254/32 ": "169.254.169.254/32",
	}
	for in, want := range good {
		p, err := ParseCIDR(in)
		require.NoError(t, err, in)
		require.Equal(t, netip.MustParsePrefix(want), p)
	}
	bad := map[string]string{
		"10.0.0.1/8": "write 10.0.0.0/8", "0.0.0.0/0": "every address", "::/0": "every address",
		"::ffff:10.0.0.0/104": "IPv4 form", "fe80::1%eth0": "zone", "example.com": "not a CIDR", "10.0.0.0/33": "not a CIDR",
	}
	for in, why := range bad {
		_, err := ParseCIDR(in)
		require.ErrorContains(t, err, why, in)
	}
}
