package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// fakeResolver answers from a table and remembers what it was asked: the
// tests never query a real DNS server.
type fakeResolver struct {
	mu    sync.Mutex
	names map[string][]string
	asked []string
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, host)
	var out []netip.Addr
	for _, s := range f.names[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if out == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (f *fakeResolver) questions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func loopbackOnly() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} }

func mustAllow(t testing.TB, allow ...string) egressrule.Allowlist {
	t.Helper()
	l, err := egressrule.ParseAllowlist(allow)
	require.NoError(t, err)
	return l
}

func testConfig(t *testing.T, allow ...string) Config {
	t.Helper()
	return Config{RunID: "test", Allow: mustAllow(t, allow...), AllowCIDRs: loopbackOnly(), MaxConnections: 100, MaxBytes: 1 << 30, IdleTimeout: 30 * time.Second}
}

func tlsConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: roots}
}

func withHostAddrs(addrs ...string) Option {
	return func(s *settings) {
		s.hostAddrs = func() ([]netip.Addr, error) {
			var out []netip.Addr
			for _, a := range addrs {
				out = append(out, netip.MustParseAddr(a))
			}
			return out, nil
		}
	}
}

func startProxy(t *testing.T, cfg Config, opts ...Option) *Proxy {
	t.Helper()
	p, err := Start(cfg, append([]Option{WithDir(t.TempDir()), withHostAddrs()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// through is an HTTP client whose proxy is p, as a program in the sandbox
// configured by HTTP_PROXY/HTTPS_PROXY is.
func through(p *Proxy, roots *x509.CertPool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress-proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p.Socket())
		},
		TLSClientConfig: tlsConfig(roots),
	}}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func hello(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "hello %s %s xff=%q pa=%q", r.Host, r.URL.Path, r.Header.Get("X-Forwarded-For"), r.Header.Get("Proxy-Authorization"))
}

func port(t testing.TB, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	require.NoError(t, err)
	return pu.Port()
}

func TestProxyAllowsListedHosts(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(hello))
	defer plain.Close()
	secure := quietTLSServer(http.HandlerFunc(hello)) // its certificate names example.com
	defer secure.Close()
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	res := &fakeResolver{names: map[string][]string{"plain.test": {"127.0.0.1"}, "example.com": {"127.0.0.1"}, "deep.www.wild.test": {"127.0.0.1"}}}
	pp, sp := port(t, plain.URL), port(t, secure.URL)
	var seen []egresslog.Decision
	var mu sync.Mutex
	p := startProxy(t, testConfig(t, "plain.test:"+pp, "*.wild.test:"+pp, "example.com:"+sp, "127.0.0.1:"+pp),
		WithResolver(res), WithObserver(func(d egresslog.Decision) { mu.Lock(); seen = append(seen, d); mu.Unlock() }))
	c := through(p, roots)

	status, body := get(t, c, "http://PLAIN.test.:"+pp+"/a")
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, `hello plain.test:`+pp+` /a xff="" pa=""`, body, "the name is normalised and nothing is added")

	req, err := http.NewRequest(http.MethodGet, "http://plain.test:"+pp+"/b", nil)
	require.NoError(t, err)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	resp, err := c.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), `pa=""`, "hop-by-hop proxy credentials stay with the proxy")

	status, body = get(t, c, "https://example.com:"+sp+"/tls")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, `hello example.com:`+sp+` /tls xff="" pa=""`, body)

	status, _ = get(t, c, "http://127.0.0.1:"+pp+"/literal")
	require.Equal(t, http.StatusOK, status, "an IP literal in the allowlist and in the operator's CIDRs")

	status, body = get(t, c, "http://deep.www.wild.test:"+pp+"/w")
	require.Equal(t, http.StatusOK, status, body)

	require.NoError(t, p.Close())
	rec := p.Record()
	require.Equal(t, int64(5), rec.Requests)
	require.Equal(t, int64(5), rec.Allowed)
	require.Equal(t, int64(5), rec.Connections)
	require.Len(t, rec.Decisions, 5)
	var up int64
	for _, d := range rec.Decisions {
		up += d.BytesUp
		require.True(t, d.Allowed, "%+v", d)
		require.Positive(t, d.BytesUp, "%+v", d)
		require.Positive(t, d.BytesDown)
		require.True(t, strings.HasPrefix(d.Addr, "127.0.0.1:"), d.Addr)
	}
	var tunnel egresslog.Decision
	for _, d := range rec.Decisions {
		if d.Method == http.MethodConnect {
			tunnel = d // recorded when the tunnel closes, not in request order
		}
	}
	require.Equal(t, "CONNECT", tunnel.Method)
	require.Equal(t, "example.com", tunnel.Host)
	require.Equal(t, http.StatusOK, tunnel.Status)
	require.Equal(t, rec.BytesUp, up)
	require.Len(t, seen, 5, "the observer saw every decision")
}

func TestProxyRefuses(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(hello))
	defer up.Close()
	secure := quietTLSServer(http.HandlerFunc(hello))
	defer secure.Close()
	pp, sp := port(t, up.URL), port(t, secure.URL)
	res := &fakeResolver{names: map[string][]string{
		"allowed.test":  {"127.0.0.1"},
		"loop.test":     {"127.0.0.2"},
		"meta.test":     {"169.254.169.254"},
		"mixed.test":    {"93.184.216.34", "10.0.0.1"},
		"private.test":  {"192.168.1.10"},
		"host.test":     {"93.184.216.35"},
		"example.com":   {"127.0.0.1"},
		"nxdomain.test": nil,
	}}
	allow := []string{"allowed.test:" + pp, "loop.test:" + pp, "meta.test", "mixed.test", "private.test", "host.test", "nxdomain.test", "example.com:" + sp, "127.0.0.2:" + pp, "8.8.8.8:" + pp}
	p := startProxy(t, testConfig(t, allow...), WithResolver(res), withHostAddrs("93.184.216.35"))
	c := through(p, nil)
	tests := []struct {
		name, url string
		status    int
		reason    string
	}{
		{"not in the allowlist", "http://denied.test:" + pp + "/", 403, "denied.test:" + pp + " is not in this run's allowlist"},
		{"port not allowed", "http://allowed.test:1/", 403, "is not in this run's allowlist"},
		{"loopback name without its CIDR", "http://loop.test:" + pp + "/", 403, "loop.test resolves to 127.0.0.2 is loopback address"},
		{"cloud metadata", "http://meta.test/", 403, "169.254.169.254 is link-local"},
		{"one private address among public ones", "http://mixed.test/", 403, "10.0.0.1 is private address"},
		{"private", "http://private.test/", 403, "private address"},
		{"this host's address", "http://host.test/", 403, "this host's own address"},
		{"ip literal outside the CIDRs", "http://127.0.0.2:" + pp + "/", 403, "an IP address named directly"},
		{"public ip literal", "http://8.8.8.8:" + pp + "/", 403, "an IP address named directly"},
		{"unresolvable", "http://nxdomain.test/", 502, "no such host"},
		{"numeric name", "http://2130706433:" + pp + "/", 400, "ends in a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(t, c, tt.url)
			require.Equal(t, tt.status, status, body)
			require.Contains(t, body, "sandboxrun egress proxy: ")
			require.Contains(t, body, tt.reason)
		})
	}
	t.Run("https to a denied host", func(t *testing.T) {
		resp, err := c.Get("https://denied.test:" + sp + "/")
		if err == nil {
			resp.Body.Close()
		}
		require.ErrorContains(t, err, "Forbidden")
	})
	t.Run("https through the plain-HTTP path", func(t *testing.T) {
		status, body := rawRequest(t, p, "GET https://example.com:"+sp+"/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
		require.Equal(t, 400, status)
		require.Contains(t, body, "send http:// URLs through HTTP_PROXY")
	})
	t.Run("origin-form request", func(t *testing.T) {
		status, body := rawRequest(t, p, "GET /x HTTP/1.1\r\nHost: allowed.test:"+pp+"\r\n\r\n")
		require.Equal(t, 400, status)
		require.Contains(t, body, "not an absolute http:// URL")
	})
	require.NotContains(t, res.questions(), "denied.test", "a name outside the allowlist is never resolved")
	rec := p.Record()
	require.Zero(t, rec.Allowed-countAllowedStatus(rec, 502), "only the unresolvable one was allowed, and it failed")
	require.Zero(t, rec.Connections, "nothing was connected to")
}

func countAllowedStatus(rec egresslog.Record, status int) int64 {
	var n int64
	for _, d := range rec.Decisions {
		if d.Allowed && d.Status == status {
			n++
		}
	}
	return n
}

// rawRequest sends text to the proxy and returns the status and body.
func rawRequest(t *testing.T, p *Proxy, text string) (int, string) {
	t.Helper()
	conn, err := net.Dial("unix", p.Socket())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, text)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// connect opens a CONNECT tunnel to authority and returns the connection
// after the proxy's 200.
func connect(t *testing.T, p *Proxy, authority string) net.Conn {
	t.Helper()
	conn, err := net.Dial("unix", p.Socket())
	require.NoError(t, err)
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Zero(t, br.Buffered())
	return conn
}

// quietTLSServer is httptest's TLS server without its log of the failed
// handshakes the tests cause on purpose.
func quietTLSServer(h http.Handler) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	return s
}

func TestProxyRequiresMatchingSNI(t *testing.T) {
	var reached sync.WaitGroup
	secure := quietTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Done() }))
	defer secure.Close()
	sp := port(t, secure.URL)
	res := &fakeResolver{names: map[string][]string{"example.com": {"127.0.0.1"}, "other.test": {"127.0.0.1"}}}
	p := startProxy(t, testConfig(t, "example.com:"+sp, "other.test:"+sp, "127.0.0.1:"+sp), WithResolver(res))
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	tests := []struct{ authority, sni, reason string }{
		{"example.com:" + sp, "other.test", `names "other.test", but the tunnel goes to example.com`},
		{"example.com:" + sp, "", "names no server (SNI)"},
		{"127.0.0.1:" + sp, "example.com", `names "example.com", but the tunnel goes to the address 127.0.0.1`},
	}
	for _, tt := range tests {
		t.Run(tt.authority+" "+tt.sni, func(t *testing.T) {
			conn := connect(t, p, tt.authority)
			defer conn.Close()
			cfg := &tls.Config{ServerName: tt.sni, RootCAs: roots}
			if tt.sni == "" {
				cfg.InsecureSkipVerify = true //nolint:gosec // the handshake must not get that far
			}
			err := tls.Client(conn, cfg).Handshake()
			require.ErrorContains(t, err, "access denied")
		})
	}
	t.Run("not TLS", func(t *testing.T) {
		conn := connect(t, p, "example.com:"+sp)
		defer conn.Close()
		fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
		b, _ := io.ReadAll(conn)
		require.Equal(t, accessDenied, b)
	})
	require.NoError(t, p.Close())
	rec := p.Record()
	require.Equal(t, int64(4), rec.Denied)
	for _, d := range rec.Decisions {
		require.False(t, d.Allowed)
		require.Zero(t, d.BytesUp, "nothing went upstream: %+v", d)
	}
	require.Equal(t, egresslog.HostStats{Host: "example.com", Port: rec.Hosts[0].Port, Denied: 3, Reason: rec.Decisions[0].Reason}, rec.Hosts[0], "most requests first")
	// Decisions are recorded as their handlers end, which need not be the
	// order the subtests ran in: look for the SNI mismatch among them.
	named := false
	for _, d := range rec.Decisions {
		named = named || strings.Contains(d.Reason, `names "other.test"`)
	}
	require.True(t, named, "a decision says which name the ClientHello gave: %+v", rec.Decisions)
}

func TestDialChecksTheAddressItConnectsTo(t *testing.T) {
	p := startProxy(t, testConfig(t, "x.test"))
	// A target whose address escaped the checks (it cannot, through allow)
	// still never gets a socket connected.
	_, _, err := p.dial(context.Background(), &target{host: egressrule.Host{Name: "x.test"}, port: 80, addrs: []netip.Addr{netip.MustParseAddr("127.0.0.3")}})
	require.ErrorIs(t, err, ErrDenied)
	require.ErrorContains(t, err, "127.0.0.3 is loopback address")
}

func TestConfigFor(t *testing.T) {
	cfg, err := ConfigFor("r1", &policy.Egress{Allow: []string{"a.example.com", "*.b.example.com:8443"}, AllowCIDRs: []string{"10.0.0.0/8"},
		MaxConnections: 5, MaxBytes: 100, IdleTimeoutSec: 2.5})
	require.NoError(t, err)
	require.Equal(t, []string{"*.b.example.com:8443", "a.example.com"}, cfg.Allow.Strings())
	require.Equal(t, 2500*time.Millisecond, cfg.IdleTimeout)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, cfg.AllowCIDRs)
	_, err = ConfigFor("r1", &policy.Egress{Allow: []string{"a.example.com"}})
	require.ErrorContains(t, err, "MaxConnections is 0")
}
