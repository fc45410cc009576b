package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
)

// serveConnect opens a TLS tunnel. Everything that can be judged before
// the tunnel opens is (allowlist, every resolved address, the limits, the
// connect itself), so a refusal is an HTTP status with a reason; then the
// ClientHello must name the same host before a byte goes upstream.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	d := egresslog.Decision{Time: time.Now(), Method: http.MethodConnect}
	defer func() { p.finish(d) }()
	h, port, err := parseAuthority(r.Host, 0)
	if err != nil {
		d.Host, d.Reason, d.Status = r.Host, err.Error(), http.StatusBadRequest
		refuse(w, d.Status, err.Error())
		return
	}
	d.Host, d.Port = h.String(), port
	t, err := p.allow(r.Context(), h, port)
	if err == nil {
		d.Allowed = true
		err = p.budget.takeConn()
	}
	var up net.Conn
	if err == nil {
		var addr netip.AddrPort
		up, addr, err = p.dial(r.Context(), t)
		if err == nil {
			d.Addr = addr.String()
		}
	}
	if err != nil {
		d.Reason, d.Status = err.Error(), statusFor(err)
		refuse(w, d.Status, err.Error())
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		closeAll(up)
		d.Reason, d.Status = "hijack the connection: "+err.Error(), http.StatusInternalServerError
		return
	}
	if !p.track(conn, up) {
		closeAll(conn, up)
		d.Reason = "the proxy is closing"
		return
	}
	defer func() {
		p.untrack(conn, up)
		closeAll(conn, up)
	}()
	d.Status = http.StatusOK
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		d.Reason = "answer the sandbox: " + err.Error()
		return
	}
	p.tunnel(&d, t, conn, brw, up)
}

// tunnel checks the ClientHello's server name, then relays both ways until
// both sides are done, the idle timeout passes or a limit is reached.
func (p *Proxy) tunnel(d *egresslog.Decision, t *target, conn net.Conn, brw *bufio.ReadWriter, up net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(p.s.helloWait))
	sni, hello, err := readClientHello(brw.Reader)
	if err == nil {
		err = checkSNI(t.host, sni)
	}
	if err != nil {
		d.Allowed, d.Reason = false, err.Error()
		_, _ = conn.Write(accessDenied)
		return
	}
	if p.intercepts(t.host, t.port) {
		p.intercept(d, t, conn, brw.Reader, hello, up)
		return
	}
	idle := newIdler(p.cfg.IdleTimeout, conn)
	u := &upstream{Conn: up, b: &p.budget, idle: idle}
	idle.add(up)
	c := &client{Conn: conn, r: brw.Reader, idle: idle}
	defer func() { d.BytesUp, d.BytesDown = u.up.Load(), u.down.Load() }()
	if _, err := u.Write(hello); err != nil {
		d.Reason = "forward the ClientHello: " + err.Error()
		return
	}
	var wg sync.WaitGroup
	var toUp, toClient error
	wg.Go(func() {
		_, toUp = io.Copy(u, c)
		if toUp == nil {
			_ = u.CloseWrite()
		} else {
			closeAll(conn)
		}
	})
	_, toClient = io.Copy(c, u)
	if toClient == nil {
		_ = closeWrite(conn)
	} else {
		closeAll(up)
	}
	wg.Wait()
	if le := u.limitErr.Load(); le != nil {
		d.Reason = le.Error()
	} else if err := errors.Join(toUp, toClient); errors.Is(err, os.ErrDeadlineExceeded) {
		d.Reason = "closed after " + p.cfg.IdleTimeout.String() + " without traffic (egress.idle_timeout)"
	}
}
