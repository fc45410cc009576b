package egress

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sandboxrun/sandboxrun/policy"
)

// The proxy's cost per request on loopback, against the same request made
// directly. Every request opens a new upstream connection in both cases, as
// the proxy does: run
//
//	go test -run '^$' -bench . -benchtime 3000x ./egress/
//
// and subtract Direct from Proxy for the overhead, HTTPSProxy from
// HTTPSIntercepted (and the KeepAlive pair) for what ending TLS at the
// proxy to add a secret costs (docs/secrets.md, "Cost").

func benchUpstreams(b *testing.B) (plain, secure *httptest.Server, roots *x509.CertPool) {
	b.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	plain = httptest.NewServer(h)
	secure = quietTLSServer(h)
	b.Cleanup(plain.Close)
	b.Cleanup(secure.Close)
	roots = x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	return plain, secure, roots
}

func benchProxy(b *testing.B, plainURL, secureURL string) *Proxy {
	b.Helper()
	cfg := Config{RunID: "bench", AllowCIDRs: loopbackOnly(), MaxConnections: 1 << 30, MaxBytes: 1 << 50, IdleTimeout: time.Minute}
	cfg.Allow = mustAllow(b, "example.com:"+port(b, secureURL), "plain.test:"+port(b, plainURL))
	p, err := Start(cfg, WithDir(b.TempDir()), withHostAddrs(),
		WithResolver(&fakeResolver{names: map[string][]string{"plain.test": {"127.0.0.1"}, "example.com": {"127.0.0.1"}}}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

func benchGet(b *testing.B, c *http.Client, url string) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func BenchmarkHTTPDirect(b *testing.B) {
	plain, _, _ := benchUpstreams(b)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	benchGet(b, c, plain.URL)
}

// BenchmarkHTTPDirectKeepAlive is the floor: one connection for every
// request, which the proxy never gives its upstream.
func BenchmarkHTTPDirectKeepAlive(b *testing.B) {
	plain, _, _ := benchUpstreams(b)
	benchGet(b, &http.Client{Transport: &http.Transport{}}, plain.URL)
}

func BenchmarkHTTPProxy(b *testing.B) {
	plain, secure, roots := benchUpstreams(b)
	p := benchProxy(b, plain.URL, secure.URL)
	// The client keeps its connection to the proxy, as curl or urllib
	// through the relay would within one program; the proxy's upstream
	// connection is new each time.
	benchGet(b, through(p, roots), "http://plain.test:"+port(b, plain.URL)+"/")
}

func BenchmarkHTTPSDirect(b *testing.B) {
	_, secure, roots := benchUpstreams(b)
	cfg := tlsConfig(roots)
	cfg.ServerName = "example.com" // the name the proxied client asks for
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cfg}}
	benchGet(b, c, secure.URL)
}

func BenchmarkHTTPSProxy(b *testing.B) {
	plain, secure, roots := benchUpstreams(b)
	p := benchProxy(b, plain.URL, secure.URL)
	c := through(p, roots)
	c.Transport.(*http.Transport).DisableKeepAlives = true // a new tunnel per request
	benchGet(b, c, "https://example.com:"+port(b, secure.URL)+"/")
}

// BenchmarkHTTPSIntercepted is BenchmarkHTTPSProxy with the host carrying
// a secret: the proxy ends the sandbox's TLS (a leaf from its CA), checks
// and rewrites the request, and opens its own verified TLS upstream. A new
// tunnel per request, so both handshakes are in every figure.
func BenchmarkHTTPSIntercepted(b *testing.B) {
	c, u := benchIntercepted(b, false)
	benchGet(b, c, u)
}

// BenchmarkHTTPSInterceptedKeepAlive keeps one tunnel for every request,
// as one program making several calls does: the cost of judging and
// rewriting a request once the connections are up.
func BenchmarkHTTPSInterceptedKeepAlive(b *testing.B) {
	c, u := benchIntercepted(b, true)
	benchGet(b, c, u)
}

// BenchmarkHTTPSProxyKeepAlive is the untouched tunnel kept for every
// request, to set against BenchmarkHTTPSInterceptedKeepAlive.
func BenchmarkHTTPSProxyKeepAlive(b *testing.B) {
	plain, secure, roots := benchUpstreams(b)
	p := benchProxy(b, plain.URL, secure.URL)
	benchGet(b, through(p, roots), "https://example.com:"+port(b, secure.URL)+"/")
}

func benchIntercepted(b *testing.B, keepAlive bool) (*http.Client, string) {
	b.Helper()
	plain, secure, roots := benchUpstreams(b)
	sp := port(b, secure.URL)
	cfg := Config{RunID: "bench", AllowCIDRs: loopbackOnly(), MaxConnections: 1 << 30, MaxBytes: 1 << 50, IdleTimeout: time.Minute, UpstreamRoots: roots}
	cfg.Allow = mustAllow(b, "example.com:"+sp, "plain.test:"+port(b, plain.URL))
	cfg.Secrets = []Secret{{Name: "TOKEN", Placeholder: PlaceholderPrefix + "bench", Hosts: mustAllow(b, "example.com:"+sp),
		Header: "Authorization", Template: "Bearer {value}", Value: policy.NewSecretValue("bench-secret-value-0123456789")}}
	p, err := Start(cfg, WithDir(b.TempDir()), withHostAddrs(),
		WithResolver(&fakeResolver{names: map[string][]string{"example.com": {"127.0.0.1"}}}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	sandboxRoots := x509.NewCertPool()
	sandboxRoots.AppendCertsFromPEM(p.CACert())
	c := through(p, sandboxRoots)
	c.Transport.(*http.Transport).DisableKeepAlives = !keepAlive
	c.Transport = &headerTransport{RoundTripper: c.Transport, key: "Authorization", value: "Bearer " + cfg.Secrets[0].Placeholder}
	return c, "https://example.com:" + sp + "/"
}

// headerTransport adds a header to every request, as a script using its
// placeholder does.
type headerTransport struct {
	http.RoundTripper
	key, value string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return h.RoundTripper.RoundTrip(r)
}
