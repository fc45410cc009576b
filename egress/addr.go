package egress

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// special is an address range that is not the public internet, with the
// name a refusal gives it.
type special struct {
	prefix netip.Prefix
	what   string
}

// specials are refused unless the operator lists a CIDR holding the
// address (IANA special-purpose registries, RFC 6890 and successors).
// IPv4-mapped IPv6 addresses are unmapped before the lookup, and NAT64
// addresses are judged by the IPv4 address they carry.
var specials = func() []special {
	table := []struct{ cidr, what string }{
		{"0.0.0.0/8", "unspecified (\"this network\")"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (cloud metadata lives here)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "6to4 relay"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved (and broadcast)"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"64:ff9b:1::/48", "local NAT64"},
		{"100::/64", "discard-only"},
		{"2001::/32", "Teredo tunnel"},
		{"2001:10::/28", "ORCHID"},
		{"2001:20::/28", "ORCHIDv2"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4 tunnel"},
		{"fc00::/7", "unique local (private)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated)"},
		{"ff00::/8", "multicast"},
	}
	out := make([]special, len(table))
	for i, s := range table {
		out[i] = special{netip.MustParsePrefix(s.cidr), s.what}
	}
	return out
}()

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// classify names the kind of a non-public address, or returns "" for a
// public one.
func classify(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if nat64.Contains(ip) {
		b := ip.As16()
		if what := classify(netip.AddrFrom4([4]byte(b[12:]))); what != "" {
			return "NAT64 of a " + what + " address"
		}
		return ""
	}
	for _, s := range specials {
		if s.prefix.Contains(ip) {
			return s.what
		}
	}
	return ""
}

// addrPolicy decides which addresses the proxy may connect to.
type addrPolicy struct {
	// allow are the operator's CIDRs.
	allow []netip.Prefix
	// own are this host's interface addresses: reaching them would reach
	// the host's own services, whatever range they are in.
	own []netip.Addr
}

// AddrError refuses an address.
type AddrError struct {
	IP netip.Addr
	// What names the kind: "loopback", "private", "this host's own
	// address", "an IP literal"...
	What string
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("%s is %s; the operator's egress.allow_cidrs must list a range holding it", e.IP, e.What)
}

// Is makes every refused address match ErrDenied.
func (e *AddrError) Is(target error) bool { return target == ErrDenied }

func (p addrPolicy) allowed(ip netip.Addr) bool {
	return slices.ContainsFunc(p.allow, func(c netip.Prefix) bool { return c.Contains(ip) })
}

// check refuses ip unless it is public and not this host's, or the
// operator allows a range holding it.
func (p addrPolicy) check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	if p.allowed(ip) {
		return nil
	}
	if what := classify(ip); what != "" {
		return &AddrError{IP: ip, What: what + " address"}
	}
	if slices.Contains(p.own, ip) {
		return &AddrError{IP: ip, What: "this host's own address"}
	}
	return nil
}

// checkLiteral refuses an IP literal a request named, unless the operator
// allows a range holding it: a skill reaches addresses only by name,
// where the allowlist judged the name.
func (p addrPolicy) checkLiteral(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	if p.allowed(ip) {
		return nil
	}
	return &AddrError{IP: ip, What: "an IP address named directly"}
}

// interfaceAddrs lists this host's addresses.
func interfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list this host's addresses (the proxy refuses them): %w", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}
