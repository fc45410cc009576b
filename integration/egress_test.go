//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
)

func TestEgressAllowedHostsWork(t *testing.T) {
	t.Parallel()
	u := startUpstreams(t)
	spec := egressSpec(t, u, fmt.Sprintf(`
import subprocess
out = {
  "http_ip": fetch("http://127.0.0.1:%[1]s/ip"),
  "http_name": fetch("http://plain.test:%[1]s/name"),
  "https_name": fetch("https://example.com:%[2]s/tls"),
  "https_ip": fetch("https://127.0.0.1:%[2]s/tls-ip"),
}
# git is the image's libcurl client: it reaches the servers through the same
# variables (the servers are not git servers, so the command itself fails).
for key, url in [("git_http", "http://plain.test:%[1]s/repo.git"), ("git_https", "https://example.com:%[2]s/repo.git")]:
    p = subprocess.run(["git", "-c", "http.sslCAInfo=" + CA, "ls-remote", url], capture_output=True, text=True, timeout=30)
    out[key] = p.stderr.strip()[:300]
print(json.dumps(out))
`, u.pp, u.sp), loopbackCIDR, "127.0.0.1:"+u.pp, "plain.test:"+u.pp, "example.com:"+u.sp, "127.0.0.1:"+u.sp)
	res := runEgress(t, spec, names{"plain.test": "127.0.0.1", "example.com": "127.0.0.1"}, shortDir(t))
	out := decode[map[string]json.RawMessage](t, res)
	for key, path := range map[string]string{"http_ip": "/ip", "http_name": "/name", "https_name": "/tls", "https_ip": "/tls-ip"} {
		var f fetched
		require.NoError(t, json.Unmarshal(out[key], &f))
		require.Equal(t, fetched{Status: 200, Body: "hello " + path}, f, key)
	}
	seen := u.requests()
	require.Contains(t, seen, "plain.test:"+u.pp+" /repo.git/info/refs", "git over http went through the proxy: %v", seen)
	require.Contains(t, seen, "example.com:"+u.sp+" /repo.git/info/refs", "git over https went through the proxy: %v", seen)

	e := res.Egress
	require.NotNil(t, e)
	require.Zero(t, e.Denied, "%+v", res.EgressRecord.Decisions)
	require.GreaterOrEqual(t, e.Allowed, int64(6), "four fetches and at least one request per git command")
	require.Positive(t, e.BytesUp)
	require.Positive(t, e.BytesDown)
	require.False(t, res.Limits.Network)
}

func TestEgressRefusals(t *testing.T) {
	t.Parallel()
	u := startUpstreams(t)
	spec := egressSpec(t, u, fmt.Sprintf(`
print(json.dumps({
  "denied_http": fetch("http://denied.test:%[1]s/x"),
  "denied_https": fetch("https://denied.test:%[2]s/x"),
  "loopback_name": fetch("http://loop.test:%[1]s/x"),
  "loopback_name_https": fetch("https://example.com:%[2]s/x"),
  "metadata_name": fetch("http://metadata.test/latest/meta-data/"),
  "loopback_literal": fetch("http://127.0.0.1:%[1]s/x"),
}))
`, u.pp, u.sp), nil, "loop.test:"+u.pp, "example.com:"+u.sp, "metadata.test", "127.0.0.1:"+u.pp)
	// No CIDR this time: loopback and link-local stay out of reach even
	// for names and addresses the allowlist names.
	table := names{"loop.test": "127.0.0.1", "metadata.test": "169.254.169.254", "example.com": "127.0.0.1"}
	res := runEgress(t, spec, table, shortDir(t))
	out := decode[map[string]fetched](t, res)
	expect := map[string]string{
		"denied_http":      "denied.test:" + u.pp + " is not in this run's allowlist",
		"loopback_name":    "loop.test resolves to 127.0.0.1 is loopback address",
		"metadata_name":    "metadata.test resolves to 169.254.169.254 is link-local",
		"loopback_literal": "127.0.0.1 is an IP address named directly",
	}
	for key, want := range expect {
		f := out[key]
		require.Equal(t, 403, f.Status, "%s: %+v", key, f)
		require.Contains(t, f.Body, "sandboxrun egress proxy: ", key)
		require.Contains(t, f.Body, want, key)
	}
	for _, key := range []string{"denied_https", "loopback_name_https"} {
		require.Contains(t, out[key].Error, "Tunnel connection failed: 403 Forbidden", key)
	}
	require.Empty(t, u.requests(), "nothing reached the servers")
	require.Equal(t, int64(6), res.Egress.Denied)
	require.Zero(t, res.Egress.Connections, "no connection was even opened")
}

func TestEgressSNIMismatchIsRefused(t *testing.T) {
	t.Parallel()
	u := startUpstreams(t)
	spec := egressSpec(t, u, fmt.Sprintf(`
def tunnel(sni):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT example.com:%[1]s HTTP/1.1\r\nHost: example.com:%[1]s\r\n\r\n")
    head = s.recv(4096).decode().split("\r\n")[0]
    ctx = ssl.create_default_context(cafile=CA)
    ctx.check_hostname = False
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET /sni HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        return {"head": head, "reply": t.recv(4096).decode().split("\r\n")[0]}
    except Exception as e:
        return {"head": head, "error": str(e)}
print(json.dumps({"match": tunnel("example.com"), "mismatch": tunnel("other.test")}))
`, u.sp), loopbackCIDR, "example.com:"+u.sp, "other.test:"+u.sp)
	res := runEgress(t, spec, names{"example.com": "127.0.0.1", "other.test": "127.0.0.1"}, shortDir(t))
	out := decode[map[string]map[string]string](t, res)
	require.Equal(t, map[string]string{"head": "HTTP/1.1 200 Connection established", "reply": "HTTP/1.1 200 OK"}, out["match"])
	require.Equal(t, "HTTP/1.1 200 Connection established", out["mismatch"]["head"])
	require.Contains(t, out["mismatch"]["error"], "ACCESS_DENIED")
	require.Equal(t, []string{"example.com /sni"}, u.requests(), "only the matching tunnel reached the server")
	var refused []egresslog.Decision
	for _, d := range res.EgressRecord.Decisions {
		if !d.Allowed {
			refused = append(refused, d)
		}
	}
	require.Len(t, refused, 1)
	require.Contains(t, refused[0].Reason, `names "other.test", but the tunnel goes to example.com`)
	require.Zero(t, refused[0].BytesUp, "not a byte of the refused hello went upstream")
}

// offline is what a script sees of the network around the proxy.
type offline struct {
	Ifaces   []string `json:"ifaces"`
	Routes   []string `json:"routes"`
	Routes6  []string `json:"routes6"`
	Direct   string   `json:"direct"`
	Node     string   `json:"node"`
	ViaProxy fetched  `json:"via_proxy"`
}

// A program that ignores the proxy variables has nowhere to go: the only
// interface is lo, there is no route, and the host's servers are not on the
// sandbox's loopback. Nothing is sent anywhere to find that out.
func TestEgressIgnoringTheProxyGetsNoConnection(t *testing.T) {
	t.Parallel()
	u := startUpstreams(t)
	spec := egressSpec(t, u, fmt.Sprintf(`
import os, subprocess
out = {"ifaces": sorted(os.listdir("/sys/class/net"))}
out["routes"] = open("/proc/net/route").read().strip().splitlines()[1:]
out["routes6"] = [l for l in open("/proc/net/ipv6_route").read().splitlines() if not l.split()[-1] == "lo"]
try:
    socket.create_connection(("127.0.0.1", %[1]s), timeout=5)
    out["direct"] = "connected"
except OSError as e:
    out["direct"] = type(e).__name__
node = "fetch('http://127.0.0.1:%[1]s/node').then(r => console.log('status ' + r.status), e => console.log('failed ' + (e.cause && e.cause.code)))"
out["node"] = subprocess.run(["node", "-e", node], capture_output=True, text=True, timeout=30).stdout.strip()
out["via_proxy"] = fetch("http://127.0.0.1:%[1]s/proxied")
print(json.dumps(out))
`, u.pp), loopbackCIDR, "127.0.0.1:"+u.pp)
	res := runEgress(t, spec, names{}, shortDir(t))
	out := decode[offline](t, res)
	require.Equal(t, []string{"lo"}, out.Ifaces)
	require.Empty(t, out.Routes, "no IPv4 route")
	require.Empty(t, out.Routes6, "no IPv6 route but loopback's")
	require.Equal(t, "ConnectionRefusedError", out.Direct, "the host's loopback is not the sandbox's")
	require.Equal(t, "failed ECONNREFUSED", out.Node, "node's fetch ignores the proxy variables, and gets nothing")
	require.Equal(t, 200, out.ViaProxy.Status, "while the proxy works for those who use it")
	require.Equal(t, []string{"127.0.0.1:" + u.pp + " /proxied"}, u.requests())
}

func TestEgressProxyDeathLeavesNoNetwork(t *testing.T) {
	t.Parallel()
	u := startUpstreams(t)
	spec := egressSpec(t, u, fmt.Sprintf(`
print(json.dumps({"first": fetch("http://127.0.0.1:%[1]s/first")}), flush=True)
# The host kills the proxy now. Keep asking until it is gone...
deadline = time.time() + 60
while time.time() < deadline:
    r = fetch("http://127.0.0.1:%[1]s/while", timeout=5)
    if "error" in r:
        break
    time.sleep(0.1)
# ...then nothing gets through any more, by the proxy or around it.
after = [fetch("http://127.0.0.1:%[1]s/after", timeout=5) for _ in range(3)]
try:
    socket.create_connection(("127.0.0.1", %[1]s), timeout=5)
    direct = "connected"
except OSError as e:
    direct = type(e).__name__
print(json.dumps({"gone": r, "after": after, "direct": direct}))
`, u.pp), loopbackCIDR, "127.0.0.1:"+u.pp)
	p := startTestProxy(t, &spec, names{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	killed := make(chan error, 1)
	spec.Stdout = &lineWriter{on: func(line string) {
		if strings.Contains(line, `"first"`) {
			killed <- p.Close()
		}
	}}
	res, err := runner.Run(ctx, spec)
	require.NoError(t, err)
	require.NoError(t, <-killed)
	requireNoContainer(t, runner, spec.RunID)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 2, res.Stdout+res.Stderr)
	var first struct{ First fetched }
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, 200, first.First.Status)
	var end struct {
		Gone   fetched
		After  []fetched
		Direct string
	}
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &end))
	require.NotEmpty(t, end.Gone.Error, "the proxy's death was noticed: %+v", end.Gone)
	for _, a := range end.After {
		require.NotEmpty(t, a.Error, "no request gets through a dead proxy: %+v", a)
		require.Zero(t, a.Status)
	}
	require.Equal(t, "ConnectionRefusedError", end.Direct)
	for _, r := range u.requests() {
		require.NotContains(t, r, "/after", "nothing reached the server after the proxy died")
	}
}

func TestEgressCancelLeavesNothing(t *testing.T) {
	t.Parallel()
	u := startUpstreams(t)
	spec := egressSpec(t, u, fmt.Sprintf(`
print(json.dumps(fetch("http://127.0.0.1:%s/start")), flush=True)
s = socket.create_connection(("127.0.0.1", 3128))  # held open through the cancel
time.sleep(120)
`, u.pp), loopbackCIDR, "127.0.0.1:"+u.pp)
	dir := shortDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec.Stdout = &lineWriter{on: func(string) { cancel() }}
	er := egressrun.Runner{Runner: runner, Options: []egress.Option{egress.WithDir(dir)}}
	res, err := er.Run(ctx, spec)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	require.Contains(t, res.Stdout, `"status": 200`)
	require.Equal(t, int64(1), res.Egress.Allowed)
	requireNoContainer(t, runner, spec.RunID)
	requireEmptyDir(t, dir)
}
