package sandboxtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The egress cases send traffic only to a server of the test's own on
// 127.0.0.1, which the operator's CIDR list allows explicitly, under names
// a resolver table gives (no DNS server is asked). The run's proxy lives in
// the test's process, as in sandboxrun's; the sandbox reaches it however
// the backend carries it (a mounted socket, the Pod's attach stream).

// upstream is the case's HTTP server; it answers "hello PATH".
func upstream(t *testing.T) (port string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "hello %s", r.URL.Path) //nolint:gosec // plain text to the case's own client on loopback
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u.Port()
}

// fetchScript fetches each URL of argv through the proxy variables and
// prints what came back, never raising.
const fetchScript = `import json, sys, urllib.request, urllib.error
out = []
for u in sys.argv[1:]:
    try:
        with urllib.request.urlopen(u, timeout=20) as r:
            out.append({"status": r.status, "body": r.read().decode()})
    except urllib.error.HTTPError as e:
        out.append({"status": e.code})
    except Exception as e:
        out.append({"error": type(e).__name__})
print(json.dumps(out))
`

type fetchResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// egressRun runs spec with an allowlist of allowed, through a proxy of
// its own; the names in table resolve to loopback, which the operator's
// CIDRs allow.
func (e Env) egressRun(t *testing.T, spec sandbox.Spec, table egress.HostTable, allowed ...string) *sandbox.Result {
	t.Helper()
	spec.Limits.Egress = &policy.Egress{Allow: allowed, AllowCIDRs: []string{"127.0.0.1/32"}, MaxConnections: 50, MaxBytes: 16 << 20, IdleTimeoutSec: 30}
	runner := e.Runner
	e.Runner = egressrun.Runner{Runner: runner, Options: []egress.Option{egress.WithResolver(table)}}
	return e.run(t, spec)
}

// EgressAllowlist checks that a run with an allowlist reaches an allowed
// host through the run's proxy, that another host is refused with the
// proxy's record of it, and that the sandbox still has loopback only.
func EgressAllowlist(t *testing.T, e Env) {
	port := upstream(t)
	table := egress.HostTable{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}
	spec := e.spec(t, fetchScript+`
import os
print(json.dumps(sorted(os.listdir("/sys/class/net"))), file=sys.stderr)
`, "http://allowed.test:"+port+"/a", "http://other.test:"+port+"/b")
	res := e.egressRun(t, spec, table, "allowed.test:"+port)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	var got []fetchResult
	require.NoError(t, json.Unmarshal(res.Output, &got), res.Stdout)
	require.Len(t, got, 2)
	require.Equal(t, fetchResult{Status: 200, Body: "hello /a"}, got[0], "the allowed host answers")
	require.Equal(t, http.StatusForbidden, got[1].Status, "the proxy refuses the other host")
	require.JSONEq(t, `["lo"]`, res.Stderr, "the sandbox has loopback only")
	require.NotNil(t, res.Egress, "the proxy's summary is in the Result")
	require.Equal(t, int64(1), res.Egress.Allowed)
	require.Equal(t, int64(1), res.Egress.Denied)
	require.NotNil(t, res.EgressRecord)
}

// EgressProxyGone checks that a sandbox whose proxy is gone has no network
// at all: the run goes on and ends with a clear Result, and what it tries
// fails.
func EgressProxyGone(t *testing.T, e Env) {
	port := upstream(t)
	table := egress.HostTable{"allowed.test": "127.0.0.1"}
	spec := e.spec(t, `import json, sys, time, urllib.request
def get():
    try:
        with urllib.request.urlopen("http://allowed.test:`+port+`/x", timeout=10) as r:
            return r.status
    except Exception as e:
        return type(e).__name__
first = get()
print("fetched", flush=True)
time.sleep(3)
print(json.dumps([first, get()]))
`)
	spec.Limits.Egress = &policy.Egress{Allow: []string{"allowed.test:" + port}, AllowCIDRs: []string{"127.0.0.1/32"}, MaxConnections: 50, MaxBytes: 16 << 20, IdleTimeoutSec: 30}
	cfg, err := egress.ConfigFor(spec.RunID, spec.Limits.Egress)
	require.NoError(t, err)
	uid, gid := sandbox.UserIDs()
	p, err := egress.Start(cfg, egress.WithResolver(table), egress.WithSocketOwner(uid, gid))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	spec.EgressSocket = p.Socket()
	// The proxy goes once the first fetch is through.
	spec.Stdout = &onLine{line: "fetched", do: func() { _ = p.Close() }}
	res := e.run(t, spec)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	var got []any
	require.NoError(t, json.Unmarshal(lastLine(res.Stdout), &got), res.Stdout)
	require.Len(t, got, 2)
	require.Equal(t, float64(200), got[0], "reached while the proxy was up")
	require.NotEqual(t, float64(200), got[1], "nothing reached once it was gone")
}

// onLine calls do once, when a line that is exactly line has been written.
type onLine struct {
	line string
	buf  []byte
	done bool
	do   func()
}

func (w *onLine) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if !w.done && containsLine(w.buf, w.line) {
		w.done = true
		w.do()
	}
	return len(p), nil
}

func containsLine(b []byte, line string) bool {
	return slices.Contains(splitLines(string(b)), line)
}

// splitLines are the whole lines of s; a last line without its newline is
// still being written.
func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	return lines[:len(lines)-1]
}

func lastLine(s string) []byte {
	lines := splitLines(s)
	if len(lines) == 0 {
		return nil
	}
	return []byte(lines[len(lines)-1])
}

// WarmEgressRuns checks that runs through an egress proxy take warm
// sandboxes (Env.Warm), started before their run's proxy existed, and that
// each reaches its allowed host through its own proxy, which records it.
func WarmEgressRuns(t *testing.T, e Env) {
	require.NotNil(t, e.Warm, "WarmEgressRuns needs Env.Warm, a runner of the backend with a warm pool")
	pool, ok := e.Warm.(sandbox.PoolReporter)
	require.True(t, ok, "Env.Warm reports on its pool")
	port := upstream(t)
	table := egress.HostTable{"allowed.test": "127.0.0.1"}
	w := e
	w.Runner = e.Warm
	spec := e.spec(t, fetchScript, "http://allowed.test:"+port+"/warm")
	before := pool.PoolStats().Hits
	for i := range 3 {
		spec.RunID = fmt.Sprintf("%s-%d", spec.RunID, i) // each run its own proxy folder
		res := w.egressRun(t, spec, table, "allowed.test:"+port)
		require.True(t, res.Success, "run %d: stderr: %s; error: %s", i, res.Stderr, res.Error)
		var got []fetchResult
		require.NoError(t, json.Unmarshal(res.Output, &got), res.Stdout)
		require.Equal(t, []fetchResult{{Status: 200, Body: "hello /warm"}}, got, "run %d reached the host", i)
		require.NotNil(t, res.Egress, "run %d", i)
		require.Equal(t, int64(1), res.Egress.Allowed, "run %d went through its own proxy", i)
		if i < 2 {
			require.Eventually(t, func() bool { return pool.PoolStats().Ready >= 1 }, time.Minute, 20*time.Millisecond,
				"the pool refills for an egress run's configuration")
		}
	}
	require.GreaterOrEqual(t, pool.PoolStats().Hits-before, uint64(2), "the second and third egress runs were warm")
}
