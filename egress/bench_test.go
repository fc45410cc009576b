package egress

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The proxy's cost per request on loopback, against the same request made
// directly. Every request opens a new upstream connection in both cases, as
// the proxy does: run
//
//	go test -run '^$' -bench . -benchtime 3000x ./egress/
//
// and subtract Direct from Proxy for the overhead.

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
