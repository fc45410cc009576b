package egress

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	tests := []struct{ ip, want string }{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001::1", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fd12:3456::1", "unique local (private)"},
		{"fc00::1", "unique local (private)"},
		{"169.254.169.254", "link-local (cloud metadata lives here)"},
		{"::ffff:169.254.169.254", "link-local (cloud metadata lives here)"},
		{"fe80::1", "link-local"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"100.127.255.255", "shared (CGNAT)"},
		{"0.0.0.0", "unspecified (\"this network\")"},
		{"0.1.2.3", "unspecified (\"this network\")"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved (and broadcast)"},
		{"240.0.0.1", "reserved (and broadcast)"},
		{"192.0.2.1", "documentation"},
		{"2001:db8::1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"::127.0.0.1", "IPv4-compatible (deprecated)"},
		{"64:ff9b::7f00:1", "NAT64 of a loopback address"},
		{"64:ff9b::a9fe:a9fe", "NAT64 of a link-local (cloud metadata lives here) address"},
		{"64:ff9b:1::1", "local NAT64"},
		{"2002:7f00:1::1", "6to4 tunnel"},
		{"2001::1", "Teredo tunnel"},
		{"fec0::1", "site-local (deprecated)"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			require.Equal(t, tt.want, classify(netip.MustParseAddr(tt.ip)))
		})
	}
	// Boundaries: one address outside each private range is public.
	for _, ip := range []string{"9.255.255.255", "11.0.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "223.255.255.255"} {
		require.Empty(t, classify(netip.MustParseAddr(ip)), ip)
	}
}

func TestAddrPolicy(t *testing.T) {
	p := addrPolicy{
		allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.5.0.0/16")},
		own:   []netip.Addr{netip.MustParseAddr("203.0.114.7"), netip.MustParseAddr("10.5.0.9")},
	}
	tests := []struct {
		ip      string
		literal bool
		refuse  string // "" when allowed
	}{
		{"8.8.8.8", false, ""},
		{"127.0.0.1", false, ""},
		{"::ffff:127.0.0.1", false, ""},
		{"127.0.0.2", false, "loopback address"},
		{"::1", false, "loopback address"},
		{"10.5.3.3", false, ""},
		{"10.6.0.1", false, "private address"},
		{"169.254.169.254", false, "link-local"},
		{"203.0.114.7", false, "this host's own address"},
		{"10.5.0.9", false, ""}, // the operator listed the range holding it
		{"8.8.8.8", true, "an IP address named directly"},
		{"127.0.0.1", true, ""},
		{"10.5.1.1", true, ""},
		{"127.0.0.2", true, "an IP address named directly"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			check := p.check
			if tt.literal {
				check = p.checkLiteral
			}
			err := check(netip.MustParseAddr(tt.ip))
			if tt.refuse == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrDenied)
			require.ErrorContains(t, err, tt.refuse)
			require.ErrorContains(t, err, "egress.allow_cidrs")
			var ae *AddrError
			require.True(t, errors.As(err, &ae))
		})
	}
}
