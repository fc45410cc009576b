package egressrule

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ErrDomain is wrapped by every refusal of an allowlist entry or of a host
// name the egress proxy was asked to reach.
var ErrDomain = errors.New("invalid allowlist entry")

// Host is a normalised network host: a lower-case DNS name without a
// trailing dot, or an IP address. The egress proxy compares, resolves and
// matches SNI against exactly this form, so the allowlist and the proxy can
// never read one host two ways.
type Host struct {
	// Name is the DNS name; empty for an IP literal.
	Name string
	// IP is set for an IP literal (IPv4-mapped IPv6 is unmapped).
	IP netip.Addr
}

// IsIP reports whether h is an IP literal.
func (h Host) IsIP() bool { return h.IP.IsValid() }

func (h Host) String() string {
	if h.IsIP() {
		return h.IP.String()
	}
	return h.Name
}

// Limits of DNS names (RFC 1035 2.3.4).
const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// ParseHost reads a host as a request names it: a DNS name (any case, one
// optional trailing dot) or an IP literal (IPv6 with or without brackets).
// Names must be ASCII letters, digits and '-' in dot-separated labels
// (internationalised names in their xn-- form); a name whose last label is
// a number (127.1, 0x7f.1, 2130706433) is refused, because resolvers and
// clients read those as IPv4 addresses.
func ParseHost(s string) (Host, error) {
	if s == "" {
		return Host{}, fmt.Errorf("%w: the host is empty", ErrDomain)
	}
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") {
			return Host{}, fmt.Errorf("%w: %q has an unclosed '['", ErrDomain, s)
		}
		return parseIPv6(s[1 : len(s)-1])
	}
	if strings.Contains(s, ":") {
		return parseIPv6(s)
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return Host{IP: ip}, nil
	}
	name, err := parseName(s)
	if err != nil {
		return Host{}, err
	}
	return Host{Name: name}, nil
}

func parseIPv6(s string) (Host, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil || !ip.Is6() || ip.Zone() != "" {
		return Host{}, fmt.Errorf("%w: %q is not an IPv6 address (write it as [2001:db8::1], without a zone)", ErrDomain, s)
	}
	return Host{IP: ip.Unmap()}, nil
}

// parseName lower-cases s, drops one trailing dot and checks the labels.
func parseName(s string) (string, error) {
	name := strings.TrimSuffix(s, ".")
	if name == "" || len(name) > maxNameLen {
		return "", fmt.Errorf("%w: %q is not a host name (1 to %d characters)", ErrDomain, s, maxNameLen)
	}
	name = strings.ToLower(name)
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return "", fmt.Errorf("%w: %q: %w", ErrDomain, s, err)
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		return "", fmt.Errorf("%w: %q ends in a number, which clients read as an IPv4 address; write the address in dotted form (127.0.0.1) or use a name", ErrDomain, s)
	}
	return name, nil
}

func checkLabel(l string) error {
	switch {
	case l == "":
		return errors.New("empty label (two dots in a row, or a leading dot)")
	case len(l) > maxLabelLen:
		return fmt.Errorf("label %q is longer than %d characters", l, maxLabelLen)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Errorf("label %q starts or ends with '-'", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return fmt.Errorf("label %q has %q; use letters, digits and '-' (internationalised names in their xn-- form)", l, rune(c))
		}
	}
	return nil
}

// numericLabel reports whether a last label reads as a number to an IPv4
// parser that accepts the inet_aton forms: decimal, octal or 0x hex.
func numericLabel(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// DefaultPorts are the ports an allowlist entry without one allows.
var DefaultPorts = []uint16{80, 443}

// DomainRule is one allowlist entry: a host pattern and a port. The pattern
// is an exact name, a wildcard "*.suffix" (every name strictly below the
// suffix, not the suffix itself), or an IP literal.
type DomainRule struct {
	// Name is the exact name, or the suffix of a wildcard; empty for IP.
	Name     string
	Wildcard bool
	IP       netip.Addr
	// Port is the one port allowed; 0 means DefaultPorts.
	Port uint16
}

// ParseDomainRule reads one allowlist entry: "api.example.com",
// "*.example.com", "api.example.com:8443", "10.0.0.5:8080", "[2001:db8::1]:443".
// Case and a trailing dot are normalised away. A wildcard needs at least two
// labels after "*." (no "*" or "*.com").
func ParseDomainRule(s string) (DomainRule, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "://") {
		return DomainRule{}, fmt.Errorf("%w: %q: write the host only (api.example.com, with :PORT when not 80 or 443), without a scheme or path", ErrDomain, s)
	}
	hostPart, port, err := splitRulePort(s)
	if err != nil {
		return DomainRule{}, err
	}
	r := DomainRule{Port: port}
	if suffix, ok := strings.CutPrefix(hostPart, "*."); ok {
		name, err := parseName(suffix)
		if err != nil {
			return DomainRule{}, fmt.Errorf("%w (in %q)", err, s)
		}
		if !strings.Contains(name, ".") {
			return DomainRule{}, fmt.Errorf("%w: %q would allow every name under a top-level domain; name the domain, e.g. *.example.com", ErrDomain, s)
		}
		r.Name, r.Wildcard = name, true
		return r, nil
	}
	if strings.Contains(hostPart, "*") {
		return DomainRule{}, fmt.Errorf("%w: %q: '*' may only be the whole first label, as in *.example.com", ErrDomain, s)
	}
	h, err := ParseHost(hostPart)
	if err != nil {
		return DomainRule{}, err
	}
	r.Name, r.IP = h.Name, h.IP
	return r, nil
}

// splitRulePort splits "host:port"; a bare IPv6 address must be bracketed.
func splitRulePort(s string) (string, uint16, error) {
	hostPart, portText := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%w: %q has an unclosed '['", ErrDomain, s)
		}
		hostPart, portText = s[:end+1], s[end+1:]
		if portText != "" {
			var ok bool
			if portText, ok = strings.CutPrefix(portText, ":"); !ok {
				return "", 0, fmt.Errorf("%w: %q: expected :PORT after ']'", ErrDomain, s)
			}
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.Count(s, ":") > 1 {
			return "", 0, fmt.Errorf("%w: %q: write an IPv6 address in brackets, e.g. [2001:db8::1]:443", ErrDomain, s)
		}
		hostPart, portText = s[:i], s[i+1:]
	}
	if hostPart == "" {
		return "", 0, fmt.Errorf("%w: %q has no host", ErrDomain, s)
	}
	if portText == "" {
		if strings.HasSuffix(s, ":") {
			return "", 0, fmt.Errorf("%w: %q has an empty port", ErrDomain, s)
		}
		return hostPart, 0, nil
	}
	port, err := ParsePort(portText)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %q: %w", ErrDomain, s, err)
	}
	return hostPart, port, nil
}

// ParsePort reads a decimal port from 1 to 65535.
func ParsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// String is the entry's canonical spelling; ParseDomainRule reads it back.
func (r DomainRule) String() string {
	var host string
	switch {
	case r.IP.IsValid() && r.IP.Is6():
		host = "[" + r.IP.String() + "]"
	case r.IP.IsValid():
		host = r.IP.String()
	case r.Wildcard:
		host = "*." + r.Name
	default:
		host = r.Name
	}
	if r.Port == 0 {
		return host
	}
	return host + ":" + strconv.Itoa(int(r.Port))
}

// Ports are the ports the entry allows.
func (r DomainRule) Ports() []uint16 {
	if r.Port == 0 {
		return slices.Clone(DefaultPorts)
	}
	return []uint16{r.Port}
}

// Match reports whether the entry allows host h on port.
func (r DomainRule) Match(h Host, port uint16) bool {
	return r.allowsPort(port) && r.coversHost(h)
}

func (r DomainRule) allowsPort(port uint16) bool {
	if r.Port == 0 {
		return slices.Contains(DefaultPorts, port)
	}
	return r.Port == port
}

func (r DomainRule) coversHost(h Host) bool {
	switch {
	case r.IP.IsValid():
		return h.IP == r.IP
	case h.IsIP():
		return false
	case r.Wildcard:
		return strings.HasSuffix(h.Name, "."+r.Name)
	default:
		return h.Name == r.Name
	}
}

// covers reports whether every host b matches, a matches too.
func (a DomainRule) covers(b DomainRule) bool {
	switch {
	case a.IP.IsValid() || b.IP.IsValid():
		return a.IP == b.IP
	case !a.Wildcard:
		return !b.Wildcard && a.Name == b.Name
	case b.Wildcard:
		return b.Name == a.Name || strings.HasSuffix(b.Name, "."+a.Name)
	default:
		return strings.HasSuffix(b.Name, "."+a.Name)
	}
}

// intersect is the entry allowing exactly what both a and b allow.
func (a DomainRule) intersect(b DomainRule) (DomainRule, bool) {
	var port uint16
	switch {
	case a.Port == b.Port:
		port = a.Port
	case a.Port == 0 && slices.Contains(DefaultPorts, b.Port):
		port = b.Port
	case b.Port == 0 && slices.Contains(DefaultPorts, a.Port):
		port = a.Port
	default:
		return DomainRule{}, false
	}
	var out DomainRule
	switch {
	case a.covers(b):
		out = b
	case b.covers(a):
		out = a
	default:
		return DomainRule{}, false
	}
	out.Port = port
	return out, true
}

// Allowlist is a list of entries; a host is allowed when one matches.
type Allowlist []DomainRule

// ParseAllowlist reads entries; every bad one is reported.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var out Allowlist
	var errs []error
	for _, e := range entries {
		r, err := ParseDomainRule(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out.Normalize(), nil
}

// Match reports whether an entry allows host h on port.
func (l Allowlist) Match(h Host, port uint16) bool {
	return slices.ContainsFunc(l, func(r DomainRule) bool { return r.Match(h, port) })
}

// Intersect is the allowlist that allows a host and port exactly when both
// l and other do: what a skill asks for, held to what the operator allows.
func (l Allowlist) Intersect(other Allowlist) Allowlist {
	var out Allowlist
	for _, a := range l {
		for _, b := range other {
			if r, ok := a.intersect(b); ok {
				out = append(out, r)
			}
		}
	}
	return out.Normalize()
}

// Strings are the entries' canonical spellings.
func (l Allowlist) Strings() []string {
	out := make([]string, len(l))
	for i, r := range l {
		out[i] = r.String()
	}
	return out
}

// Normalize sorts and drops duplicates and entries another entry subsumes.
func (l Allowlist) Normalize() Allowlist {
	out := Allowlist{}
	for i, r := range l {
		dropped := false
		for j, o := range l {
			if (o == r && j < i) || (o != r && o.subsumes(r)) {
				dropped = true
				break
			}
		}
		if !dropped {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b DomainRule) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// subsumes reports whether a allows everything b allows.
func (a DomainRule) subsumes(b DomainRule) bool {
	ports := a.Port == b.Port || a.Port == 0 && slices.Contains(DefaultPorts, b.Port)
	return ports && a.covers(b)
}

// ParseCIDR reads an address range: a CIDR with its host bits zero
// (10.0.0.0/8), or one address (127.0.0.1 is 127.0.0.1/32). A /0 is refused:
// it would open every address, cloud metadata included, in one line.
func ParseCIDR(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if ip, err := netip.ParseAddr(s); err == nil {
		if ip.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q: drop the zone", s)
		}
		return netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or fd00::/8", s)
	case p.Addr().Is4In6():
		return netip.Prefix{}, fmt.Errorf("%q: write IPv4 ranges in IPv4 form, e.g. 10.0.0.0/8", s)
	case p.Bits() == 0:
		return netip.Prefix{}, fmt.Errorf("%q allows every address, cloud metadata and this host included; list the ranges the skills need", s)
	case p != p.Masked():
		return netip.Prefix{}, fmt.Errorf("%q has host bits set; write %s", s, p.Masked())
	}
	return p, nil
}
