//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The egress tests send traffic only to servers of their own on 127.0.0.1,
// which the operator's CIDR list allows explicitly. Names resolve through a
// table, never a DNS server.

// upstreams are the test's own HTTP and HTTPS servers; the HTTPS one's
// certificate names example.com and 127.0.0.1.
type upstreams struct {
	plain, secure *httptest.Server
	pp, sp        string // their ports
	mu            sync.Mutex
	seen          []string // "host path" of every request that arrived
}

func startUpstreams(t *testing.T) *upstreams {
	t.Helper()
	u := &upstreams{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Host+" "+r.URL.Path)
		u.mu.Unlock()
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	})
	u.plain = httptest.NewServer(h)
	u.secure = httptest.NewUnstartedServer(h)
	u.secure.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	u.secure.StartTLS()
	t.Cleanup(u.plain.Close)
	t.Cleanup(u.secure.Close)
	u.pp, u.sp = portOf(t, u.plain.URL), portOf(t, u.secure.URL)
	return u
}

func portOf(t *testing.T, s string) string {
	t.Helper()
	pu, err := url.Parse(s)
	require.NoError(t, err)
	return pu.Port()
}

func (u *upstreams) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// caPEM is the HTTPS server's certificate, for the sandbox's clients.
func (u *upstreams) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.secure.Certificate().Raw}))
}

// fetchPy is a prelude for scripts: fetch(url) through the proxy variables,
// trusting the test's certificate, and never raising.
const fetchPy = `import json, os, socket, ssl, sys, time, urllib.request, urllib.error
CA = os.environ["SKILL_DIR"] + "/ca.pem"
def fetch(url, timeout=20):
    ctx = ssl.create_default_context(cafile=CA)
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as r:
            return {"status": r.status, "body": r.read().decode()}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode()}
    except Exception as e:
        return {"error": type(e).__name__ + ": " + str(e)}
`

// egressSpec runs a Python script with an egress allowlist; cidrs are the
// operator's allowed ranges.
func egressSpec(t *testing.T, u *upstreams, code string, cidrs []string, allow ...string) sandbox.Spec {
	t.Helper()
	spec := pySpec(t, fetchPy+code)
	spec.SkillDir = newSkill(t, map[string]string{"ca.pem": u.caPEM()})
	spec.Limits.Egress = &policy.Egress{Allow: allow, AllowCIDRs: cidrs, MaxConnections: 50, MaxBytes: 16 << 20, IdleTimeoutSec: 30}
	return spec
}

var loopbackCIDR = []string{"127.0.0.1/32"}

// runEgress runs spec through an egressrun.Runner whose proxies resolve with
// table and live in dir, and checks nothing is left of the run.
func runEgress(t *testing.T, spec sandbox.Spec, table names, dir string) *sandbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	er := egressrun.Runner{Runner: runner, Options: []egress.Option{egress.WithResolver(table), egress.WithDir(dir)}}
	res, err := er.Run(ctx, spec)
	require.NoError(t, err)
	require.NotNil(t, res)
	requireNoContainer(t, runner, spec.RunID)
	requireEmptyDir(t, dir)
	return res
}

// shortDir is a fresh folder with a path short enough for a unix socket
// (t.TempDir's are not, with the proxy's own folder inside).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "eg")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// requireEmptyDir checks that the egress proxies left nothing in dir. The
// private folder of the sandboxes' hosts file (sandboxrun-hosts-UID, when
// dir is the CLI's TMPDIR) is kept on purpose, for every later run.
func requireEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "sandboxrun-hosts-") {
			left = append(left, e.Name())
		}
	}
	require.Empty(t, left, "the proxy's folder and socket are removed")
}

func decode[T any](t *testing.T, res *sandbox.Result) T {
	t.Helper()
	require.True(t, res.Success, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	var v T
	require.NoError(t, json.Unmarshal(res.Output, &v), res.Stdout)
	return v
}

type fetched struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// lineWriter calls on with each line of the script's stdout as it arrives.
type lineWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	on  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line)
			return len(p), nil
		}
		w.on(strings.TrimSuffix(line, "\n"))
	}
}

// startTestProxy starts a proxy for spec the test can kill mid-run.
func startTestProxy(t *testing.T, spec *sandbox.Spec, table names) *egress.Proxy {
	t.Helper()
	cfg, err := egress.ConfigFor(spec.RunID, spec.Limits.Egress)
	require.NoError(t, err)
	uid, gid := sandbox.UserIDs()
	p, err := egress.Start(cfg, egress.WithResolver(table), egress.WithDir(shortDir(t)), egress.WithSocketOwner(uid, gid))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	spec.EgressSocket = p.Socket()
	return p
}

// names is a resolver table: no test asks a real DNS server.
type names = egress.HostTable
