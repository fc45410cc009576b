package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// maxHelloBytes bounds what the proxy reads before it has a ClientHello;
// crypto/tls bounds the message itself to 64 KiB.
const maxHelloBytes = 128 << 10

// errGotHello stops the handshake as soon as the ClientHello is parsed.
var errGotHello = errors.New("client hello read")

// readClientHello reads from r until it has the TLS ClientHello and returns
// the server name it asks for ("" when it names none) and every byte read,
// which the caller forwards unchanged. The parsing is crypto/tls's own: a
// server handshake over a connection that records what it reads and drops
// what it writes, stopped right after the ClientHello.
func readClientHello(r io.Reader) (sni string, raw []byte, err error) {
	c := &helloConn{r: r}
	got := false
	srv := tls.Server(c, &tls.Config{
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			sni, got = chi.ServerName, true
			return nil, errGotHello
		},
	})
	herr := srv.Handshake()
	if !got {
		return "", c.buf.Bytes(), fmt.Errorf("%w: the tunnel did not start with a TLS ClientHello (%w); the proxy tunnels TLS only: use http:// through HTTP_PROXY for plain HTTP", ErrDenied, herr)
	}
	return sni, c.buf.Bytes(), nil
}

// checkSNI requires the ClientHello to name the host the tunnel goes to:
// the same name, in the same normal form, or no name for an IP literal
// (TLS never sends addresses as names).
func checkSNI(h egressrule.Host, sni string) error {
	if h.IsIP() {
		if sni != "" {
			return fmt.Errorf("%w: the TLS ClientHello names %q, but the tunnel goes to the address %s", ErrDenied, sni, h)
		}
		return nil
	}
	if sni == "" {
		return fmt.Errorf("%w: the TLS ClientHello names no server (SNI), but the tunnel goes to %s", ErrDenied, h)
	}
	got, err := egressrule.ParseHost(sni)
	if err != nil || got != h {
		return fmt.Errorf("%w: the TLS ClientHello names %q, but the tunnel goes to %s: they must be the same host", ErrDenied, sni, h)
	}
	return nil
}

// accessDenied is a TLS fatal alert, access_denied (RFC 8446 6.2), sent
// to a client whose ClientHello is refused so its error says so.
var accessDenied = []byte{21, 3, 3, 0, 2, 2, 49}

// helloConn feeds crypto/tls from r, keeps a copy of what it read and
// drops what it writes (the alert a stopped handshake sends).
type helloConn struct {
	r   io.Reader
	buf bytes.Buffer
}

func (c *helloConn) Read(p []byte) (int, error) {
	if c.buf.Len() >= maxHelloBytes {
		return 0, fmt.Errorf("no ClientHello in the first %d bytes", maxHelloBytes)
	}
	p = p[:min(len(p), maxHelloBytes-c.buf.Len())]
	n, err := c.r.Read(p)
	c.buf.Write(p[:n])
	return n, err
}

func (c *helloConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *helloConn) Close() error                     { return nil }
func (c *helloConn) LocalAddr() net.Addr              { return helloAddr{} }
func (c *helloConn) RemoteAddr() net.Addr             { return helloAddr{} }
func (c *helloConn) SetDeadline(time.Time) error      { return nil }
func (c *helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c *helloConn) SetWriteDeadline(time.Time) error { return nil }

type helloAddr struct{}

func (helloAddr) Network() string { return "sandbox" }
func (helloAddr) String() string  { return "sandbox" }
