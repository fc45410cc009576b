package egress

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

const testSecret = "ghp_egress_unit_value_0123456789abcdef"

// recorder is an upstream that remembers every request's headers and
// echoes the Authorization header back, as a careless API might.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
	body []string
}

func (l *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	l.seen = append(l.seen, r.Header.Clone())
	l.body = append(l.body, string(b))
	l.mu.Unlock()
	w.Header().Set("X-Echo", r.Header.Get("Authorization"))
	fmt.Fprintf(w, "path=%s auth=%s", r.URL.Path, r.Header.Get("Authorization"))
}

func (l *headerLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.seen, l.body)
}

func (l *headerLog) last() http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) == 0 {
		return nil
	}
	return l.seen[len(l.seen)-1]
}

type interceptSetup struct {
	p       *Proxy
	c       *http.Client
	log     *headerLog
	secure  string // https://example.com:PORT
	other   string // https://www.example.com:PORT (an HTTP rule, no secret)
	plain   string // http://plain.test:PORT
	ph      string
	basicPH string
}

func setupIntercept(t *testing.T, trustUpstream bool, opts ...Option) *interceptSetup {
	t.Helper()
	log := &headerLog{}
	secure := quietTLSServer(log)
	t.Cleanup(secure.Close)
	plain := httptest.NewServer(log)
	t.Cleanup(plain.Close)
	sp, pp := port(t, secure.URL), port(t, plain.URL)
	cfg := testConfig(t, "example.com:"+sp, "www.example.com:"+sp, "plain.test:"+pp)
	cfg.Secrets = []Secret{
		{Name: "GITHUB_TOKEN", Placeholder: PlaceholderPrefix + "aaaa", Hosts: mustAllow(t, "example.com:"+sp, "plain.test:"+pp),
			Header: "Authorization", Template: "Bearer {value}", Value: policy.NewSecretValue(testSecret)},
		{Name: "BASIC_PW", Placeholder: PlaceholderPrefix + "bbbb", Hosts: mustAllow(t, "example.com:"+sp),
			Template: "api:{value}", Value: policy.NewSecretValue("basic-" + testSecret)},
	}
	cfg.Rules = []egressrule.HTTPRule{{Host: "example.com:" + sp, Methods: []string{"GET", "POST"}, Paths: []string{"/repos/acme/"}}, {Host: "www.example.com:" + sp}}
	cfg.SkillRules = []egressrule.HTTPRule{{Host: "example.com:" + sp, Paths: []string{"/repos/acme/public/", "/repos/acme/upload"}}}
	for i := range cfg.Rules {
		require.NoError(t, cfg.Rules[i].Check())
	}
	require.NoError(t, cfg.SkillRules[0].Check())
	if trustUpstream {
		cfg.UpstreamRoots = x509.NewCertPool()
		cfg.UpstreamRoots.AddCert(secure.Certificate())
	}
	p := startProxy(t, cfg, append([]Option{WithResolver(&fakeResolver{names: map[string][]string{
		"example.com": {"127.0.0.1"}, "www.example.com": {"127.0.0.1"}, "plain.test": {"127.0.0.1"}}})}, opts...)...)
	require.FileExists(t, p.CAFile())
	sandboxRoots := x509.NewCertPool()
	require.True(t, sandboxRoots.AppendCertsFromPEM(p.CACert()))
	return &interceptSetup{p: p, c: through(p, sandboxRoots), log: log,
		secure: "https://example.com:" + sp, other: "https://www.example.com:" + sp, plain: "http://plain.test:" + pp,
		ph: cfg.Secrets[0].Placeholder, basicPH: cfg.Secrets[1].Placeholder}
}

func do(t *testing.T, c *http.Client, method, u string, h http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NotContains(t, resp.Header.Get("X-Echo"), testSecret)
	return resp.StatusCode, string(b)
}

func TestInterceptAppliesSecrets(t *testing.T) {
	s := setupIntercept(t, true)
	status, body := do(t, s.c, "GET", s.secure+"/repos/acme/public/x", http.Header{"Authorization": {"token " + s.ph}}, "")
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "Bearer "+testSecret, s.log.last().Get("Authorization"), "the template replaces what the sandbox sent")
	require.Equal(t, "path=/repos/acme/public/x auth=Bearer "+strings.Repeat("*", len(testSecret)), body, "an echoed secret is masked")
	require.Equal(t, "identity", s.log.last().Get("Accept-Encoding"))

	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("anything:"+s.basicPH))
	status, body = do(t, s.c, "POST", s.secure+"/repos/acme/upload", http.Header{"Authorization": {basic}}, "data")
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("api:basic-"+testSecret)), s.log.last().Get("Authorization"))
	require.NotContains(t, body, base64.StdEncoding.EncodeToString([]byte("api:basic-"+testSecret)), "an echoed basic credential is masked")
	require.Contains(t, body, "auth=Basic ***", "the echo is there, masked")

	// No placeholder, no secret.
	status, _ = do(t, s.c, "GET", s.secure+"/repos/acme/public/y", nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, s.log.last().Get("Authorization"))

	require.NoError(t, s.p.Close())
	rec := s.p.Record()
	var applied [][]string
	for _, d := range rec.Decisions {
		if d.Method != http.MethodConnect {
			require.True(t, d.Intercepted)
			applied = append(applied, d.Secrets)
		}
	}
	require.ElementsMatch(t, [][]string{{"GITHUB_TOKEN"}, {"BASIC_PW"}, nil}, applied)
	require.Zero(t, rec.ExfiltrationAttempts)
	requireNoValue(t, rec)
}

func requireNoValue(t *testing.T, v any) {
	t.Helper()
	require.NotContains(t, fmt.Sprintf("%+v", v), testSecret)
}

func TestInterceptRefuses(t *testing.T) {
	s := setupIntercept(t, true)
	bearer := http.Header{"Authorization": {"Bearer " + s.ph}}
	tests := []struct {
		name, method, url string
		h                 http.Header
		body              string
		status            int
		reason            string
		exfil             bool
	}{
		{"placeholder in another header", "GET", s.secure + "/repos/acme/public/", http.Header{"X-Debug": {s.ph}}, "", 403, "is in the header X-Debug", true},
		{"placeholder in the query", "GET", s.secure + "/repos/acme/public/?t=" + s.ph, nil, "", 403, "is in the URL", true},
		{"placeholder to another host", "GET", s.other + "/", bearer, "", 403, "of a request to www.example.com", true},
		{"placeholder over plain HTTP", "GET", s.plain + "/", bearer, "", 403, "plain-HTTP request", true},
		{"basic placeholder as a bearer", "GET", s.secure + "/repos/acme/public/", http.Header{"Authorization": {"Bearer " + s.basicPH}}, "", 403, "secret BASIC_PW", true},
		{"method outside the rule", "DELETE", s.secure + "/repos/acme/public/x", nil, "", 403, "DELETE /repos/acme/public/x to example.com is outside the operator's egress.rules", false},
		{"path outside the rule", "GET", s.secure + "/repos/other/x", nil, "", 403, "outside the operator's egress.rules", false},
		{"path outside the skill's rule", "GET", s.secure + "/repos/acme/private/x", nil, "", 403, "outside the skill's egress_rules", false},
		{"dot segments", "GET", s.secure + "/repos/acme/public/%2e%2e/%2e%2e/private", nil, "", 403, "dot segments", false},
		{"dot segment with parameters", "GET", s.secure + "/repos/acme/public/..;/private", nil, "", 403, "dot segment with parameters", false},
		{"encoded slash", "GET", s.secure + "/repos/acme/public%2f..%2fsecret", nil, "", 403, "encoded slash", false},
		// Last: the host sees the start of this body (the request is cut
		// where the placeholder completes) and logs it after the answer.
		{"placeholder in the body", "POST", s.secure + "/repos/acme/upload", nil, strings.Repeat("x", 70000) + s.ph, 403, "is in the body", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.log.count()
			status, body := do(t, s.c, tt.method, tt.url, tt.h, tt.body)
			require.Equal(t, tt.status, status, body)
			require.Contains(t, body, tt.reason)
			require.NotContains(t, body, s.ph)
			if !strings.Contains(tt.name, "body") {
				require.Equal(t, before, s.log.count(), "a refused request never reaches the host")
			}
		})
	}
	require.NotContains(t, s.log.all(), s.ph)
	require.NotContains(t, s.log.all(), s.basicPH)
	require.NoError(t, s.p.Close())
	rec := s.p.Record()
	require.Equal(t, int64(6), rec.ExfiltrationAttempts)
	requireNoValue(t, rec)
}

func TestInterceptRefusesAnUnverifiedUpstream(t *testing.T) {
	s := setupIntercept(t, false) // the test server's CA is not trusted
	status, body := do(t, s.c, "GET", s.secure+"/repos/acme/public/x", http.Header{"Authorization": {"Bearer " + s.ph}}, "")
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, body, "could not verify example.com")
	require.Nil(t, s.log.last(), "nothing reached the host")
}

func TestInterceptHostMustMatch(t *testing.T) {
	s := setupIntercept(t, true)
	req, err := http.NewRequest("GET", s.secure+"/repos/acme/public/", nil)
	require.NoError(t, err)
	req.Host = "www.example.com"
	resp, err := s.c.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, string(b), "the request's Host")
}

func TestConfigForSecrets(t *testing.T) {
	e := &policy.Egress{Allow: []string{"api.example.com"}, MaxConnections: 5, MaxBytes: 100, IdleTimeoutSec: 1,
		Secrets: []policy.EgressSecret{policy.NewEgressSecret("TOK", []string{"api.example.com"}, "X-Api-Key: k={value}", false, policy.NewSecretValue(testSecret))},
		Rules:   []egressrule.HTTPRule{{Host: "api.example.com", Methods: []string{"get"}}}}
	a, err := ConfigFor("r1", e)
	require.NoError(t, err)
	b, err := ConfigFor("r2", e)
	require.NoError(t, err)
	require.Len(t, a.Secrets, 1)
	require.Equal(t, "X-Api-Key", a.Secrets[0].Header)
	require.Equal(t, "k={value}", a.Secrets[0].Template)
	require.True(t, strings.HasPrefix(a.Secrets[0].Placeholder, PlaceholderPrefix))
	require.NotEqual(t, a.Secrets[0].Placeholder, b.Secrets[0].Placeholder, "a placeholder per run")
	require.Equal(t, []string{"GET"}, a.Rules[0].Methods)
	requireNoValue(t, a)
}

func (l *headerLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

func TestInterceptRelaysAnUpgrade(t *testing.T) {
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		b := make([]byte, 4)
		if _, err := io.ReadFull(brw, b); err == nil {
			_, _ = conn.Write(b)
		}
	})
	_, c, base, _ := interceptOne(t, up)
	req, err := http.NewRequest("GET", base+"/ws", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	rw, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok)
	_, err = rw.Write([]byte("ping"))
	require.NoError(t, err)
	b := make([]byte, 4)
	_, err = io.ReadFull(rw, b)
	require.NoError(t, err)
	require.Equal(t, "ping", string(b))
}

// An intercepted tunnel with a request in flight is cut by Close, which
// waits for it and leaves nothing behind: no folder, no CA bundle.
func TestInterceptCloseCutsTheTunnel(t *testing.T) {
	release := make(chan struct{})
	slow := quietTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-release
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	sp := port(t, slow.URL)
	cfg := testConfig(t, "example.com:"+sp)
	cfg.Rules = []egressrule.HTTPRule{{Host: "example.com:" + sp}}
	require.NoError(t, cfg.Rules[0].Check())
	cfg.UpstreamRoots = x509.NewCertPool()
	cfg.UpstreamRoots.AddCert(slow.Certificate())
	p := startProxy(t, cfg, WithResolver(&fakeResolver{names: map[string][]string{"example.com": {"127.0.0.1"}}}))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.CACert())
	resp, err := through(p, roots).Get("https://example.com:" + sp + "/stream")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	bundle := p.CAFile()
	require.FileExists(t, bundle)

	require.NoError(t, p.Close())
	_, err = io.ReadAll(resp.Body)
	require.Error(t, err, "the response was cut, not left to time out")
	require.NoFileExists(t, bundle)
	rec := p.Record()
	require.Len(t, rec.Decisions, 2, "the tunnel and its request")
}

func TestRulesApplyToPlainHTTP(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(hello))
	t.Cleanup(plain.Close)
	pp := port(t, plain.URL)
	cfg := testConfig(t, "plain.test:"+pp)
	cfg.Rules = []egressrule.HTTPRule{{Host: "plain.test:" + pp, Methods: []string{"GET"}, Paths: []string{"/ok/"}}}
	require.NoError(t, cfg.Rules[0].Check())
	p := startProxy(t, cfg, WithResolver(&fakeResolver{names: map[string][]string{"plain.test": {"127.0.0.1"}}}))
	c := through(p, nil)
	status, _ := do(t, c, "GET", "http://plain.test:"+pp+"/ok/x", nil, "")
	require.Equal(t, http.StatusOK, status)
	status, body := do(t, c, "POST", "http://plain.test:"+pp+"/ok/x", nil, "")
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, body, "POST /ok/x to plain.test is outside the operator's egress.rules")
	status, _ = do(t, c, "GET", "http://plain.test:"+pp+"/other", nil, "")
	require.Equal(t, http.StatusForbidden, status)
	require.NoError(t, p.Close())
	require.Equal(t, int64(0), p.Record().ExfiltrationAttempts)
	paths := map[string]bool{}
	for _, d := range p.Record().Decisions {
		paths[d.Method+" "+d.Path] = d.Allowed
	}
	require.Equal(t, map[string]bool{"GET /ok/x": true, "POST /ok/x": false, "GET /other": false}, paths)
}
