package egressrule

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

var domainSeeds = []string{
	"", "example.com", "Example.COM.", "*.example.com", "*.example.com:443", "a.example.com:8443",
	"127.0.0.1", "127.0.0.1:8080", "[::1]:443", "[::ffff:127.0.0.1]", "::1", "*.com", "*", "a.*.com",
	"127.1", "0x7f.1", "2130706433", "a..b", ".a", "a.", "a.com.:80", "xn--bcher-kva.example",
	"a_b.com", "bücher.de", "a.com:0", "a.com:65536", "https://a.com", "[fe80::1%eth0]", "*..com",
	"*.a.com.", "-a.com", "a-.com", "localhost", "a.0x", "a.08", "[1.2.3.4]:80",
}

// FuzzParseDomainRule checks the allowlist grammar: an accepted entry has a
// canonical spelling that reads back to the same entry, holds only the
// characters the proxy compares, and matches what it says it matches.
func FuzzParseDomainRule(f *testing.F) {
	for _, s := range domainSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseDomainRule(s)
		if err != nil {
			if !errors.Is(err, ErrDomain) {
				t.Fatalf("error %v does not wrap ErrDomain", err)
			}
			return
		}
		again, err := ParseDomainRule(r.String())
		if err != nil || again != r {
			t.Fatalf("%q parsed to %q, which reads back as %+v (%v)", s, r.String(), again, err)
		}
		if r.IP.IsValid() {
			if r.Name != "" || r.Wildcard || r.IP.Is4In6() || r.IP.Zone() != "" {
				t.Fatalf("%q: bad IP entry %+v", s, r)
			}
			if !r.Match(Host{IP: r.IP}, r.Ports()[0]) {
				t.Fatalf("%q does not match its own address", s)
			}
			return
		}
		checkCanonicalName(t, s, r.Name)
		if _, err := netip.ParseAddr(r.Name); err == nil {
			t.Fatalf("%q: the name %q is an IP address", s, r.Name)
		}
		for _, port := range []uint16{r.Ports()[0], 1, 80, 443, 65535} {
			own := Host{Name: r.Name}
			below := Host{Name: "x." + r.Name}
			want := r.allowsPort(port)
			if got := r.Match(own, port); got != (want && !r.Wildcard) {
				t.Fatalf("%q on %s:%d: match %v", s, own, port, got)
			}
			if got := r.Match(below, port); got != (want && r.Wildcard) {
				t.Fatalf("%q on %s:%d: match %v", s, below, port, got)
			}
		}
		if both, ok := r.intersect(r); !ok || both != r {
			t.Fatalf("%q ∩ itself = %+v, %v", s, both, ok)
		}
	})
}

// FuzzParseHost checks request hosts: parsing is idempotent, names are in
// the one canonical form, and nothing is both a name and an address.
func FuzzParseHost(f *testing.F) {
	for _, s := range domainSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHost(s)
		if err != nil {
			if !errors.Is(err, ErrDomain) {
				t.Fatalf("error %v does not wrap ErrDomain", err)
			}
			return
		}
		if h.IsIP() == (h.Name != "") {
			t.Fatalf("%q: %+v is neither or both a name and an address", s, h)
		}
		again, err := ParseHost(h.String())
		if err != nil || again != h {
			t.Fatalf("%q parsed to %q, which reads back as %+v (%v)", s, h, again, err)
		}
		if h.IsIP() {
			if h.IP.Is4In6() || h.IP.Zone() != "" {
				t.Fatalf("%q: address %s not unmapped or has a zone", s, h.IP)
			}
			return
		}
		checkCanonicalName(t, s, h.Name)
		if !strings.EqualFold(strings.TrimSuffix(s, "."), h.Name) {
			t.Fatalf("%q normalised to %q: more than case and one trailing dot changed", s, h.Name)
		}
	})
}

func checkCanonicalName(t *testing.T, in, name string) {
	t.Helper()
	if name == "" || len(name) > maxNameLen || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		t.Fatalf("%q: name %q is not canonical", in, name)
	}
	if strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
		t.Fatalf("%q: name %q has characters outside [a-z0-9.-]", in, name)
	}
	labels := strings.Split(name, ".")
	if numericLabel(labels[len(labels)-1]) {
		t.Fatalf("%q: name %q ends in a number", in, name)
	}
}
