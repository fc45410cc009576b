package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// target is a checked destination: the host as the request named it, its
// port, and the addresses the proxy will dial, every one of them checked.
type target struct {
	host  egressrule.Host
	port  uint16
	addrs []netip.Addr
}

func (t *target) String() string {
	return net.JoinHostPort(t.host.String(), strconv.Itoa(int(t.port)))
}

// parseAuthority reads host:port as a CONNECT request or a transport names
// it. The host goes through egressrule.ParseHost, the allowlist's own reader.
func parseAuthority(s string, defaultPort uint16) (egressrule.Host, uint16, error) {
	hostText, portText, err := net.SplitHostPort(s)
	if err != nil {
		if defaultPort == 0 {
			return egressrule.Host{}, 0, fmt.Errorf("%w: %q is not host:port", ErrDenied, s)
		}
		hostText, portText = s, strconv.Itoa(int(defaultPort))
		if h, ok := trimBrackets(s); ok {
			hostText = h
		}
	}
	h, err := egressrule.ParseHost(hostText)
	if err != nil {
		return egressrule.Host{}, 0, fmt.Errorf("%w: %w", ErrDenied, err)
	}
	port, err := egressrule.ParsePort(portText)
	if err != nil {
		return egressrule.Host{}, 0, fmt.Errorf("%w: %q: %w", ErrDenied, s, err)
	}
	return h, port, nil
}

func trimBrackets(s string) (string, bool) {
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1], true
	}
	return s, false
}

// allow checks the allowlist, then resolves and checks every address.
// It never opens a connection.
func (p *Proxy) allow(ctx context.Context, h egressrule.Host, port uint16) (*target, error) {
	if !p.cfg.Allow.Match(h, port) {
		return nil, fmt.Errorf("%w: %s is not in this run's allowlist (%s); the skill's allowed_domains and the operator's policy decide it",
			ErrDenied, net.JoinHostPort(h.String(), strconv.Itoa(int(port))), allowlistText(p.cfg.Allow))
	}
	t := &target{host: h, port: port}
	if h.IsIP() {
		if err := p.addrs.checkLiteral(h.IP); err != nil {
			return nil, err
		}
		t.addrs = []netip.Addr{h.IP}
		return t, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.s.dialTimeout)
	defer cancel()
	ips, err := p.s.resolver.LookupNetIP(ctx, "ip", h.Name)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", h.Name, err)
	}
	for _, ip := range ips {
		ip = ip.Unmap().WithZone("")
		// Every address must pass: a name that mixes a public address
		// with a private one is refused whole, so no retry or resolver
		// order can reach the private one.
		if err := p.addrs.check(ip); err != nil {
			return nil, fmt.Errorf("%s resolves to %w", h.Name, err)
		}
		if !slices.Contains(t.addrs, ip) {
			t.addrs = append(t.addrs, ip)
		}
	}
	if len(t.addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", h.Name)
	}
	return t, nil
}

func allowlistText(l egressrule.Allowlist) string {
	if len(l) == 0 {
		return "empty"
	}
	const most = 8
	s := l.Strings()
	if len(s) > most {
		return fmt.Sprintf("%s and %d more", strings.Join(s[:most], ", "), len(s)-most)
	}
	return strings.Join(s, ", ")
}

// dial connects to the target's checked addresses in turn. It dials
// addresses, never the name, so nothing is resolved again between the check
// and the connection; the dialer's control hook checks once more the
// address the socket actually connects to.
func (p *Proxy) dial(ctx context.Context, t *target) (net.Conn, netip.AddrPort, error) {
	d := net.Dialer{Timeout: p.s.dialTimeout, ControlContext: p.recheck}
	var errs []error
	for _, ip := range t.addrs {
		ap := netip.AddrPortFrom(ip, t.port)
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap, nil
		}
		errs = append(errs, err)
	}
	return nil, netip.AddrPort{}, fmt.Errorf("connect to %s: %w", t, errors.Join(errs...))
}

func (p *Proxy) recheck(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: connecting to %q, which is not an address", ErrDenied, address)
	}
	return p.addrs.check(ap.Addr())
}
