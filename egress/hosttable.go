package egress

import (
	"context"
	"net"
	"net/netip"
)

// HostTable is a Resolver that answers from a fixed table of names to
// addresses and knows no other name: for tests and benchmarks, which must
// never ask a real DNS server, and for hosts whose names an operator pins.
type HostTable map[string]string

// LookupNetIP returns the table's address for host, or a not-found error.
func (t HostTable) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if s, ok := t[host]; ok {
		if ip, err := netip.ParseAddr(s); err == nil {
			return []netip.Addr{ip}, nil
		}
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
