package egress

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// forwardKey carries a request's exchange to the transport's dialer.
type forwardKey struct{}

// exchange is one forwarded request: its checked target, and what the
// transport and the reverse proxy report back into its decision.
type exchange struct {
	t *target
	// body scans the request's body and trailers for placeholders.
	body *scanReader

	mu   sync.Mutex
	d    *egresslog.Decision
	conn *upstream
}

// bodyHit is the placeholder the body or a trailer carried, or nil.
func (ex *exchange) bodyHit() *scanHit {
	if ex.body == nil {
		return nil
	}
	return ex.body.found()
}

func (ex *exchange) update(f func(d *egresslog.Decision)) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	f(ex.d)
}

// authority is the target as the upstream request names it.
func (t *target) authority() string {
	switch {
	case t.port != 80:
		return t.String()
	case t.host.IsIP() && t.host.IP.Is6():
		return "[" + t.host.String() + "]"
	default:
		return t.host.String()
	}
}

// serveForward forwards a plain-HTTP request for an absolute http:// URL,
// the form clients send to an HTTP_PROXY. Each request gets its own
// upstream connection, so each is one decision with its own bytes.
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request) {
	d := egresslog.Decision{Time: time.Now(), Method: r.Method, Host: r.URL.Host}
	ex := &exchange{d: &d}
	defer func() {
		ex.mu.Lock()
		if ex.conn != nil {
			d.BytesUp, d.BytesDown = ex.conn.up.Load(), ex.conn.down.Load()
			if le := ex.conn.limitErr.Load(); le != nil && d.Reason == "" {
				d.Reason = le.Error()
			}
		}
		// The transport's dial may outlive this handler (a request given
		// up on while connecting) and still write d under ex.mu: what is
		// recorded is the copy taken here.
		rec := d
		ex.mu.Unlock()
		p.finish(rec)
	}()
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		d.Status = http.StatusBadRequest
		d.Reason = fmt.Sprintf("%q is not an absolute http:// URL; this is the sandbox's HTTP proxy: send http:// URLs through HTTP_PROXY and https:// through HTTPS_PROXY (CONNECT)", r.RequestURI)
		refuse(w, d.Status, d.Reason)
		return
	}
	h, port, err := parseAuthority(r.URL.Host, 80)
	if err != nil {
		d.Status, d.Reason = http.StatusBadRequest, err.Error()
		refuse(w, d.Status, d.Reason)
		return
	}
	d.Host, d.Port, d.Path = h.String(), port, r.URL.Path
	t, err := p.allow(r.Context(), h, port)
	if err == nil {
		err = checkRules([][]egressrule.HTTPRule{p.cfg.Rules, p.cfg.SkillRules}, h, port, r.Method, r.URL.EscapedPath(), r.URL.Path)
	}
	if err == nil {
		_, err = applySecrets(p.cfg.Secrets, r, h, port, false)
		d.Exfiltration = errors.Is(err, ErrExfiltration)
	}
	if err == nil {
		d.Allowed = true
		err = p.budget.takeConn()
	}
	if err != nil {
		d.Status, d.Reason = statusFor(err), err.Error()
		refuse(w, d.Status, d.Reason)
		return
	}
	if r.Body != nil && r.Body != http.NoBody && len(p.cfg.Secrets) > 0 {
		ex.body = newScanReader(r.Body, p.cfg.Secrets, func() http.Header { return r.Trailer })
		r.Body = ex.body
	}
	ex.t = t
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, ex)))
}

// forwarder is the reverse proxy that sends forwarded requests upstream.
// It removes hop-by-hop headers (Proxy-Authorization among them), adds no
// X-Forwarded-* headers, leaves bodies as they are (no transparent
// compression) and streams responses as they arrive.
func (p *Proxy) forwarder(errLog *log.Logger) *httputil.ReverseProxy {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            p.dialExchange,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		ResponseHeaderTimeout:  p.cfg.IdleTimeout,
		MaxResponseHeaderBytes: 1 << 20,
	}
	exOf := func(r *http.Request) *exchange {
		ex, _ := r.Context().Value(forwardKey{}).(*exchange)
		return ex
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = exOf(pr.In).t.authority()
			pr.Out.Host = ""
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      errLog,
		ModifyResponse: func(resp *http.Response) error {
			exOf(resp.Request).update(func(d *egresslog.Decision) { d.Status = resp.StatusCode })
			return nil
		},
		ErrorHandler: forwardError,
	}
}

// forwardError answers a request the transport could not complete: cut by
// a placeholder in its body (refused as exfiltration), a limit, or the
// upstream.
func forwardError(w http.ResponseWriter, r *http.Request, err error) {
	ex, _ := r.Context().Value(forwardKey{}).(*exchange)
	if hit := ex.bodyHit(); hit != nil {
		var hosts egressrule.Allowlist
		for _, s := range ex.body.secrets {
			if s.Name == hit.name {
				hosts = s.Hosts
			}
		}
		err = exfiltration(&Secret{Name: hit.name, Hosts: hosts}, hit.where, ex.t.host)
	}
	status := statusFor(err)
	ex.update(func(d *egresslog.Decision) {
		d.Status, d.Reason = status, err.Error()
		if errors.Is(err, ErrExfiltration) {
			d.Allowed, d.Exfiltration = false, true
		}
	})
	refuse(w, status, err.Error())
}

// dialExchange connects the transport to the request's checked target,
// and only to it.
func (p *Proxy) dialExchange(ctx context.Context, _, addr string) (net.Conn, error) {
	ex, _ := ctx.Value(forwardKey{}).(*exchange)
	if ex == nil || ex.t == nil {
		return nil, fmt.Errorf("%w: no checked target for %s", ErrDenied, addr)
	}
	h, port, err := parseAuthority(addr, 0)
	if err != nil || h != ex.t.host || port != ex.t.port {
		return nil, fmt.Errorf("%w: the transport asked for %s, but the request was checked for %s", ErrDenied, addr, ex.t)
	}
	c, ap, err := p.dial(ctx, ex.t)
	if err != nil {
		return nil, err
	}
	u := &upstream{Conn: c, b: &p.budget, idle: newIdler(p.cfg.IdleTimeout, c)}
	ex.mu.Lock()
	ex.conn = u
	ex.d.Addr = ap.String()
	ex.mu.Unlock()
	return u, nil
}
