package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/testlog"
	"github.com/sandboxrun/sandboxrun/server"
)

// replicaPair is two servers, r-0 and r-1, each with a sessions root of its
// own, reaching each other as http://r-N.peer (a transport maps the names
// to their loopback listeners; another name does not resolve).
type replicaPair struct {
	url [2]string
	eng [2]*specEngine
	ts  [2]*httptest.Server
	log [2]*testlog.Buffer
}

func startPair(t testing.TB) *replicaPair {
	t.Helper()
	p := &replicaPair{}
	var lns [2]net.Listener
	addrs := map[string]string{}
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[i] = ln
		addrs["r-"+string(rune('0'+i))+".peer"] = ln.Addr().String()
	}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		to, ok := addrs[host]
		if !ok {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}}
	t.Cleanup(transport.CloseIdleConnections)
	for i := range lns {
		name := "r-" + string(rune('0'+i))
		p.eng[i] = &specEngine{}
		metrics := server.NewMetrics()
		svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{p.eng[i]},
			SessionsRoot: t.TempDir(), Replica: name, Observer: metrics})
		require.NoError(t, err)
		t.Cleanup(func() { _ = svc.Close() })
		p.log[i] = &testlog.Buffer{}
		srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB),
			Logger:   slog.New(slog.NewTextHandler(p.log[i], nil)),
			Replicas: &server.Replicas{Self: name, PeerURL: "http://{replica}.peer", Count: 2, Transport: transport}})
		require.NoError(t, err)
		p.ts[i] = httptest.NewUnstartedServer(srv.Handler())
		p.ts[i].Listener.Close()
		p.ts[i].Listener = lns[i]
		p.ts[i].Start()
		t.Cleanup(p.ts[i].Close)
		p.url[i] = p.ts[i].URL
	}
	return p
}

func TestForwardToTheOwner(t *testing.T) {
	p := startPair(t)
	id := newSession(t, p.url[0], tokenA)
	require.True(t, strings.HasPrefix(id, "r-0-"), id)
	require.True(t, strings.HasPrefix(newSession(t, p.url[1], tokenA), "r-1-"), "new sessions are made where the request lands")

	r := call(t, "PUT", p.url[1]+"/v1/sessions/"+id+"/files/in/a.txt", "through r-1", as(tokenA)...)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.Len(t, r.header.Values("X-Request-Id"), 1, "the caller sees the entry's request id only")
	r = call(t, "GET", p.url[0]+"/v1/sessions/"+id+"/files/in/a.txt", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "through r-1", string(r.body))
	require.Eventually(t, func() bool {
		return strings.Contains(p.log[1].String(), "owner=r-0 replica=r-1 owner_request_id=") &&
			strings.Contains(p.log[0].String(), "forwarded_by=r-1")
	}, 5*time.Second, 10*time.Millisecond, "the entry logs the owner, the owner who forwarded:\n%s\n%s", p.log[1], p.log[0])

	t.Run("queries and headers reach the owner", func(t *testing.T) {
		r := call(t, "GET", p.url[1]+"/v1/sessions/"+id+"/files?path=in", "", as(tokenA)...)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.Contains(t, string(r.body), `"in/a.txt"`)
		r = call(t, "GET", p.url[1]+"/v1/sessions/"+id+"/files", "", append(as(tokenA), "Accept", "application/x-tar")...)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, "application/x-tar", r.header.Get("Content-Type"))
		require.Contains(t, string(r.body), "through r-1")
		r = call(t, "GET", p.url[1]+"/v1/sessions/"+id+"/files/in/../../x", "", as(tokenA)...)
		require.Equal(t, http.StatusBadRequest, r.status, "paths are checked at the entry too")
	})
	t.Run("a run naming the session in its body runs on the owner", func(t *testing.T) {
		r := call(t, "POST", p.url[1]+"/v1/skills/hello/exec", `{"command": "echo hi", "session": "`+id+`"}`, as(tokenA)...)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.Len(t, p.eng[0].workspaces, 1)
		require.Empty(t, p.eng[1].workspaces)
	})
	t.Run("a streamed run stays streamed", func(t *testing.T) {
		r := call(t, "POST", p.url[1]+"/v1/skills/hello/exec", `{"command": "echo hi", "session": "`+id+`"}`,
			append(as(tokenA), "Accept", "application/x-ndjson")...)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.Equal(t, "application/x-ndjson", r.header.Get("Content-Type"))
		var types []string
		sc := bufio.NewScanner(strings.NewReader(string(r.body)))
		for sc.Scan() {
			var ev struct{ Type string }
			require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
			types = append(types, ev.Type)
		}
		require.Equal(t, []string{"stdout", "stderr", "usage", "result"}, types)
	})
	t.Run("another token's session is not found through either", func(t *testing.T) {
		for _, u := range p.url {
			r := call(t, "GET", u+"/v1/sessions/"+id+"/files/in/a.txt", "", as(tokenB)...)
			require.Equal(t, http.StatusNotFound, r.status, string(r.body))
		}
	})
	t.Run("no token: refused at the entry, never forwarded", func(t *testing.T) {
		before := metricsOf(t, p.url[1])
		r := call(t, "GET", p.url[1]+"/v1/sessions/"+id+"/files/in/a.txt", "")
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, forwards(before, "answered"), forwards(metricsOf(t, p.url[1]), "answered"))
	})
	t.Run("a forwarded request is never forwarded again", func(t *testing.T) {
		r := call(t, "GET", p.url[1]+"/v1/sessions/"+id, "", append(as(tokenA), server.ForwardedHeader, "r-0")...)
		require.Equal(t, http.StatusMisdirectedRequest, r.status, string(r.body))
		require.Contains(t, string(r.body), `replica \"r-0\"`)
		r = call(t, "GET", p.url[1]+"/v1/sessions/"+id, "", append(as(tokenA), server.ForwardedHeader, "<script>alert(1)</script>")...)
		require.Equal(t, http.StatusMisdirectedRequest, r.status, string(r.body))
		require.NotContains(t, string(r.body), "script")
		// The header skips nothing: the owner serves its own session
		// after checking the token as always.
		r = call(t, "GET", p.url[0]+"/v1/sessions/"+id, "", server.ForwardedHeader, "r-1")
		require.Equal(t, http.StatusUnauthorized, r.status)
	})

	text := metricsOf(t, p.url[1])
	require.Contains(t, text, `sandboxrun_forwarded_requests_total{outcome="misdirected"} 2`)
	require.NotContains(t, text, `sandboxrun_forwarded_requests_total{outcome="answered"} 0`)

	t.Run("an owner that is down is 503 with Retry-After, never 404", func(t *testing.T) {
		p.ts[0].Close()
		for _, path := range []string{"/v1/sessions/" + id, "/v1/sessions/" + id + "/files/in/a.txt"} {
			r := call(t, "GET", p.url[1]+path, "", as(tokenA)...)
			require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
			require.Equal(t, "5", r.header.Get("Retry-After"))
			require.Contains(t, string(r.body), `replica \"r-0\" holds it`)
			require.NotContains(t, string(r.body), "127.0.0.1", "internal addresses stay in the log")
		}
		r := call(t, "POST", p.url[1]+"/v1/skills/hello/exec", `{"command": "echo hi", "session": "`+id+`"}`, as(tokenA)...)
		require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
		require.Empty(t, p.eng[1].workspaces, "no run on a replica that does not own the session")
		// A replica no name resolves to is unreachable the same way.
		r = call(t, "GET", p.url[1]+"/v1/sessions/r-7-"+id[len("r-0-"):], "", as(tokenA)...)
		require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
		require.Contains(t, metricsOf(t, p.url[1]), `sandboxrun_forwarded_requests_total{outcome="unreachable"} 4`)
	})
}

func metricsOf(t *testing.T, url string) string {
	t.Helper()
	r := call(t, "GET", url+"/metrics", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status)
	return string(r.body)
}

// forwards reads one outcome's count off a metrics page.
func forwards(text, outcome string) string {
	prefix := `sandboxrun_forwarded_requests_total{outcome="` + outcome + `"} `
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return ""
}

// TestOpenAPISaysOwnerDown: every operation that can name another
// replica's session documents the 503 (with Retry-After) of an owner that
// is down; creating and listing sessions stay on the replica asked.
func TestOpenAPISaysOwnerDown(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(server.OpenAPI, &doc))
	n := 0
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Responses map[string]struct {
					Description string         `json:"description"`
					Headers     map[string]any `json:"headers"`
				} `json:"responses"`
			}
			require.NoError(t, json.Unmarshal(raw, &op))
			routed := strings.HasPrefix(path, "/v1/sessions/{id}") || (strings.HasPrefix(path, "/v1/skills/{name}/") && method == "post") ||
				(path == "/v1/sessions" && method == "post") // a fork
			r, ok := op.Responses["503"]
			if !routed {
				if strings.HasPrefix(path, "/v1/sessions") {
					require.False(t, ok, "%s %s is served by the replica asked", method, path)
				}
				continue
			}
			n++
			require.True(t, ok, "%s %s: no 503", method, path)
			require.Contains(t, r.Description, "another replica", "%s %s", method, path)
			require.Contains(t, r.Headers, "Retry-After", "%s %s", method, path)
		}
	}
	require.GreaterOrEqual(t, n, 11)
}

// TestOpenAPISessionIDPattern: the documented id pattern takes the ids of
// both shapes the server makes.
func TestOpenAPISessionIDPattern(t *testing.T) {
	var doc struct {
		Components struct {
			Parameters map[string]struct {
				Schema struct {
					Pattern string `json:"pattern"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(server.OpenAPI, &doc))
	re := regexp.MustCompile(doc.Components.Parameters["SessionID"].Schema.Pattern)
	for _, id := range []string{sandboxrun.NewSessionID(""), sandboxrun.NewSessionID("r-0"), sandboxrun.NewSessionID("rel-sandboxrun-12"), sandboxrun.NewSessionID(strings.Repeat("a", 63))} {
		require.True(t, re.MatchString(id), id)
	}
	for _, id := range []string{"", "x", "-" + sandboxrun.NewSessionID(""), "R-0-" + sandboxrun.NewSessionID(""), "../" + sandboxrun.NewSessionID("")} {
		require.False(t, re.MatchString(id), id)
	}
}
