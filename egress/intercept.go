package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// intercepts reports whether the proxy terminates TLS for h:port: the host
// carries a secret or an HTTP rule. Other hosts keep the untouched tunnel.
func (p *Proxy) intercepts(h egressrule.Host, port uint16) bool {
	return p.ca != nil && (needsSecret(p.cfg.Secrets, h, port) || covered(p.cfg.Rules, h, port) || covered(p.cfg.SkillRules, h, port))
}

// interception is one intercepted tunnel: the sandbox's TLS ends at the
// proxy, each request in it is judged on its own, and goes upstream over
// the proxy's own TLS, verified against the system's roots and the
// operator's upstream CA.
type interception struct {
	p     *Proxy
	t     *target
	vals  [][]byte // the secret values masked in answers
	idle  *idler
	first net.Conn // the verified upstream connection, used by the first request
	upErr error    // why the upstream cannot be used, for every request

	// active counts requests being served: a hijacked connection (an
	// upgrade) lives on in its handler after the server lets it go.
	active sync.WaitGroup

	mu    sync.Mutex
	conns []*upstream
	rp    *httputil.ReverseProxy
	tr    *http.Transport
}

// intercept serves the tunnel's requests after the ClientHello named the
// tunnel's host. d is the tunnel's decision; each request gets its own.
func (p *Proxy) intercept(d *egresslog.Decision, t *target, conn net.Conn, r io.Reader, hello []byte, up net.Conn) {
	d.Intercepted = true
	it := &interception{p: p, t: t, vals: secretValues(p.cfg.Secrets), idle: newIdler(p.cfg.IdleTimeout, conn)}
	u := &upstream{Conn: up, b: &p.budget, idle: it.idle}
	it.idle.add(up)
	it.conns = append(it.conns, u)
	defer func() {
		if it.tr != nil {
			it.tr.CloseIdleConnections()
		}
		it.mu.Lock()
		for i, c := range it.conns {
			d.BytesUp += c.up.Load()
			d.BytesDown += c.down.Load()
			if i > 0 { // the first is the tunnel's own, untracked by serveConnect
				p.untrack(c.Conn)
			}
			closeAll(c)
		}
		it.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), p.s.dialTimeout)
	defer cancel()
	// The upstream is verified before the sandbox's handshake, so a host
	// the proxy cannot trust never sees a request; the sandbox still gets
	// an answer saying why.
	upTLS := tls.Client(u, p.upstreamTLS(t))
	if err := upTLS.HandshakeContext(ctx); err != nil {
		it.upErr = fmt.Errorf("%w: the proxy could not verify %s (%w); the operator's egress.upstream_ca adds roots for internal hosts", ErrDenied, t.host, err)
		d.Allowed, d.Reason = false, it.upErr.Error()
	} else {
		it.first = upTLS
	}
	it.tr = it.transport()
	it.rp = it.forwarder()
	c := &client{Conn: conn, r: io.MultiReader(bytes.NewReader(hello), r), idle: it.idle}
	srvTLS := tls.Server(c, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.ca.leaf(t.host)
		},
	})
	if err := srvTLS.HandshakeContext(ctx); err != nil {
		if d.Reason == "" {
			d.Reason = "TLS with the sandbox: " + err.Error()
		}
		return
	}
	it.serve(srvTLS)
}

// upstreamTLS verifies the upstream as the named host, TLS 1.2 or later.
func (p *Proxy) upstreamTLS(t *target) *tls.Config {
	return &tls.Config{
		ServerName: t.host.String(),
		RootCAs:    p.cfg.UpstreamRoots,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
	}
}

// serve runs an HTTP/1.1 server on the one connection until it closes.
func (it *interception) serve(c net.Conn) {
	done := make(chan struct{})
	var once sync.Once
	srv := &http.Server{
		Handler:           it,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       it.p.cfg.IdleTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				once.Do(func() { close(done) })
			}
		},
	}
	ln := &oneConnListener{c: c, closed: make(chan struct{})}
	go func() { _ = srv.Serve(ln) }()
	<-done
	it.active.Wait()
	_ = srv.Close()
}

// ServeHTTP judges one request of the tunnel and forwards it.
func (it *interception) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	it.active.Add(1)
	defer it.active.Done()
	p, t := it.p, it.t
	d := egresslog.Decision{Time: time.Now(), Method: r.Method, Host: t.host.String(), Port: t.port, Path: r.URL.Path, Intercepted: true}
	defer func() { p.finish(d) }()
	fail := func(err error) {
		d.Reason, d.Status = err.Error(), statusFor(err)
		d.Exfiltration = errors.Is(err, ErrExfiltration)
		refuse(w, d.Status, d.Reason)
	}
	if it.upErr != nil {
		fail(it.upErr)
		return
	}
	if err := sameHost(r.Host, t); err != nil {
		fail(err)
		return
	}
	if err := checkRules([][]egressrule.HTTPRule{p.cfg.Rules, p.cfg.SkillRules}, t.host, t.port, r.Method, r.URL.EscapedPath(), r.URL.Path); err != nil {
		fail(err)
		return
	}
	applied, err := applySecrets(p.cfg.Secrets, r, t.host, t.port, true)
	if err != nil {
		fail(err)
		return
	}
	d.Allowed, d.Secrets = true, applied
	if len(it.vals) > 0 {
		// A compressed answer would hide an echoed secret from the mask
		// (maskResponse decodes one from a server that ignores this). Any
		// request to the host asks, not only one the proxy put a secret
		// in: the server may echo what an earlier request carried.
		r.Header.Set("Accept-Encoding", "identity")
	}
	var body *scanReader
	if r.Body != nil && r.Body != http.NoBody {
		body = newScanReader(r.Body, p.cfg.Secrets, func() http.Header { return r.Trailer })
		r.Body = body
	}
	ex := &exchange{t: t, d: &d, body: body}
	it.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, ex)))
}

// sameHost requires the request's Host to name the tunnel's host: the
// leaf certificate, the SNI and the Host header all name one host.
func sameHost(hostHeader string, t *target) error {
	h, port, err := parseAuthority(hostHeader, t.port)
	if err == nil && h == t.host && port == t.port {
		return nil
	}
	return fmt.Errorf("%w: the request's Host %q is not %s, the host this TLS connection was opened for", ErrDenied, hostHeader, t)
}

// transport sends the tunnel's requests upstream: first over the verified
// connection, then over new ones, each counted and verified like it.
func (it *interception) transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DisableCompression:     true,
		MaxIdleConnsPerHost:    1,
		ResponseHeaderTimeout:  it.p.cfg.IdleTimeout,
		MaxResponseHeaderBytes: 1 << 20,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			it.mu.Lock()
			c := it.first
			it.first = nil
			it.mu.Unlock()
			if c != nil {
				return c, nil
			}
			return it.redial(ctx)
		},
	}
}

func (it *interception) redial(ctx context.Context) (net.Conn, error) {
	p := it.p
	if err := p.budget.takeConn(); err != nil {
		return nil, err
	}
	c, _, err := p.dial(ctx, it.t)
	if err != nil {
		return nil, err
	}
	u := &upstream{Conn: c, b: &p.budget, idle: it.idle}
	it.idle.add(c)
	if !p.track(c) {
		closeAll(c)
		return nil, errors.New("the proxy is closing")
	}
	it.mu.Lock()
	it.conns = append(it.conns, u)
	it.mu.Unlock()
	tc := tls.Client(u, p.upstreamTLS(it.t))
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("%w: the proxy could not verify %s (%w)", ErrDenied, it.t.host, err)
	}
	return tc, nil
}

// forwarder is the reverse proxy of the tunnel's requests: hop-by-hop
// headers removed, no X-Forwarded-*, secret values masked in answers.
func (it *interception) forwarder() *httputil.ReverseProxy {
	vals := it.vals
	exOf := func(r *http.Request) *exchange {
		ex, _ := r.Context().Value(forwardKey{}).(*exchange)
		return ex
	}
	host := it.t.host.String()
	if it.t.host.IsIP() && it.t.host.IP.Is6() {
		host = "[" + host + "]"
	}
	if it.t.port != 443 {
		host = net.JoinHostPort(it.t.host.String(), strconv.Itoa(int(it.t.port)))
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = &url.URL{Scheme: "https", Host: host, Path: pr.In.URL.Path, RawPath: pr.In.URL.RawPath, RawQuery: pr.In.URL.RawQuery}
			pr.Out.Host = ""
		},
		Transport:     it.tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ModifyResponse: func(resp *http.Response) error {
			exOf(resp.Request).update(func(d *egresslog.Decision) { d.Status = resp.StatusCode })
			// An upgraded connection (101) is relayed as it is: the
			// reverse proxy needs its body writable, and a mask over it
			// would break it.
			if len(vals) > 0 && resp.StatusCode != http.StatusSwitchingProtocols {
				return maskResponse(resp, vals)
			}
			return nil
		},
		ErrorHandler: forwardError,
	}
}

func secretValues(secrets []Secret) [][]byte {
	var out [][]byte
	for i := range secrets {
		s := &secrets[i]
		if v := s.Value.Reveal(); v != "" {
			out = append(out, []byte(v))
		}
		// A basic-auth secret travels as base64 of user:value, in which
		// the value's own bytes never appear: an upstream echoing the
		// Authorization header would hand the credential back unmasked.
		if s.Header == "" && s.Value.Reveal() != "" {
			out = append(out, []byte(base64.StdEncoding.EncodeToString([]byte(s.render()))))
		}
	}
	return out
}

// oneConnListener hands out one connection, then waits until closed.
type oneConnListener struct {
	mu     sync.Mutex
	c      net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return helloAddr{} }
