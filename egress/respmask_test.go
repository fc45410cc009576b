package egress

import (
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

// interceptOne is a proxy intercepting one loopback TLS host, h, for which
// the run holds one secret (Authorization: Bearer); it returns the proxy,
// the sandbox's client, the host's base URL and the placeholder.
func interceptOne(t *testing.T, h http.Handler) (*Proxy, *http.Client, string, string) {
	t.Helper()
	up := quietTLSServer(h)
	t.Cleanup(up.Close)
	sp := port(t, up.URL)
	cfg := testConfig(t, "example.com:"+sp)
	cfg.Secrets = []Secret{{Name: "T", Placeholder: PlaceholderPrefix + "dddd", Hosts: mustAllow(t, "example.com:"+sp),
		Header: "Authorization", Template: "Bearer {value}", Value: policy.NewSecretValue(testSecret)}}
	cfg.UpstreamRoots = x509.NewCertPool()
	cfg.UpstreamRoots.AddCert(up.Certificate())
	p := startProxy(t, cfg, WithResolver(&fakeResolver{names: map[string][]string{"example.com": {"127.0.0.1"}}}))
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(p.CACert()))
	return p, through(p, roots), "https://example.com:" + sp, cfg.Secrets[0].Placeholder
}

// echoer answers with the credential it was last sent, the way the path
// asks, ignoring the Accept-Encoding it was sent (remembered per path).
type echoer struct {
	mu       sync.Mutex
	last     string
	encoding map[string]string
}

func (e *echoer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	if a := r.Header.Get("Authorization"); a != "" {
		e.last = a
	}
	auth := e.last
	e.encoding[r.URL.Path] = r.Header.Get("Accept-Encoding")
	e.mu.Unlock()
	var out io.WriteCloser
	var inner io.Closer // the coding under out's, for "gzip, deflate"
	switch r.URL.Path {
	case "/gzip":
		w.Header().Set("Content-Encoding", "gzip")
		out = gzip.NewWriter(w)
	case "/deflate":
		w.Header().Set("Content-Encoding", "deflate")
		out = zlib.NewWriter(w)
	case "/raw-deflate":
		w.Header().Set("Content-Encoding", "deflate")
		out, _ = flate.NewWriter(w, flate.BestSpeed)
	case "/twice":
		w.Header().Set("Content-Encoding", "gzip, deflate") // gzip applied first
		z := zlib.NewWriter(w)
		out, inner = gzip.NewWriter(z), z
	case "/br":
		w.Header().Set("Content-Encoding", "br")
		_, _ = io.WriteString(w, "not really brotli: "+auth)
		return
	case "/trailer":
		w.Header().Set("Trailer", "X-Echo")
		_, _ = io.WriteString(w, "see the trailers")
		w.Header().Set("X-Echo", auth)
		w.Header().Set(http.TrailerPrefix+"X-Late", auth)
		w.Header().Set(http.TrailerPrefix+"X-Name-"+strings.TrimPrefix(auth, "Bearer "), "1")
		return
	default:
		_, _ = io.WriteString(w, "plain "+auth)
		return
	}
	_, _ = io.WriteString(out, "compressed "+auth)
	_ = out.Close()
	if inner != nil {
		_ = inner.Close()
	}
}

// An upstream that echoes the secret compressed, although it was asked
// for identity, or in its trailers, hands the sandbox only the mask; one
// in a coding the proxy cannot read is refused.
func TestInterceptMasksEncodedEchoes(t *testing.T) {
	e := &echoer{encoding: map[string]string{}}
	p, c, base, ph := interceptOne(t, e)
	masked := "Bearer " + strings.Repeat("*", len(testSecret))
	// send returns the status, the trailers and the body the sandbox got.
	send := func(path string, withPH bool) (int, http.Header, string) {
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		if withPH {
			req.Header.Set("Authorization", "Bearer "+ph)
		}
		// The sandbox's client asks for gzip; the proxy asks for identity.
		req.Header.Set("Accept-Encoding", "gzip, deflate, br")
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NotContains(t, string(b), testSecret)
		require.NotContains(t, resp.Header, "Content-Encoding")
		return resp.StatusCode, resp.Trailer, string(b)
	}
	for _, path := range []string{"/gzip", "/deflate", "/raw-deflate", "/twice"} {
		status, _, body := send(path, true)
		require.Equal(t, http.StatusOK, status, path)
		require.Equal(t, "compressed "+masked, body, path)
		e.mu.Lock()
		require.Equal(t, "identity", e.encoding[path], "the proxy asked for identity")
		e.mu.Unlock()
	}
	// No secret put in this request, but the host remembers the last one:
	// identity is asked for, and the echo masked, all the same.
	status, _, body := send("/gzip", false)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "compressed "+masked, body)
	e.mu.Lock()
	require.Equal(t, "identity", e.encoding["/gzip"])
	e.mu.Unlock()

	_, trailer, body := send("/trailer", true)
	require.Equal(t, "see the trailers", body)
	require.Equal(t, masked, trailer.Get("X-Echo"), "a declared trailer's value")
	require.Equal(t, masked, trailer.Get("X-Late"), "an undeclared trailer's value")
	require.Equal(t, "1", trailer.Get("X-Name-"+strings.Repeat("*", len(testSecret))), "a trailer's name")
	requireNoValue(t, trailer)

	status, _, body = send("/br", true)
	require.Equal(t, http.StatusBadGateway, status)
	require.Contains(t, body, `Content-Encoding "br" although the proxy asked for identity`)

	require.NoError(t, p.Close())
	rec := p.Record()
	requireNoValue(t, rec)
	last := rec.Decisions[len(rec.Decisions)-2] // the tunnel's own decision is last
	require.Equal(t, "/br", last.Path)
	require.Equal(t, http.StatusBadGateway, last.Status)
}

func TestMaskNameIgnoresCase(t *testing.T) {
	vals := [][]byte{[]byte("ghp_Secret")}
	require.Equal(t, "X-**********-Y", maskName("X-Ghp_secret-Y", vals))
	require.Equal(t, "X-Other", maskName("X-Other", vals))
}
