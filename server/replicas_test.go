package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
)

// random is an id of the single-server shape: 26 characters of base32.
var random = sandboxrun.NewSessionID("")

func TestReplicasValidate(t *testing.T) {
	for _, tc := range []struct {
		name, self, peer, err string
		count                 int
	}{
		{"cluster", "rel-sandboxrun-1", "http://{replica}.rel-sandboxrun-headless.ns.svc.cluster.local:8080", "", 0},
		{"loopback ordinal", "r-0", "http://127.0.0.1:1808{ordinal}", "", 0},
		{"https with slash", "r-0", "https://{replica}.example:8443/", "", 0},
		{"bad name", "R_0", "http://{replica}:8080", "bad replica name", 0},
		{"no peer", "r-0", "", "no peer URL", 0},
		{"names nobody", "r-0", "http://peer:8080", "names no replica", 0},
		{"unknown placeholder", "r-0", "http://{replica}.{ns}:8080", "only {replica} and {ordinal}", 0},
		{"ordinal without number", "alpha", "http://10.0.0.{ordinal}:8080", "does not end in a number", 0},
		{"names without numbers, under a domain", "alpha", "http://{replica}.sandboxrun-headless.ns.svc:8080", "", 0},
		{"names without numbers, bare host", "alpha", "http://{replica}:8080", "under a domain of yours", 0},
		{"numbered names, bare host", "sandboxrun-0", "http://{replica}:8080", "", 0},
		{"not http", "r-0", "unix:/run/{replica}.sock", "not an http or https URL", 0},
		{"path", "r-0", "http://{replica}:8080/api", "no path, query or credentials", 0},
		{"credentials", "r-0", "http://u:p@{replica}:8080", "no path, query or credentials", 0},
		{"query", "r-0", "http://{replica}:8080?x=1", "no path, query or credentials", 0},
		{"counted", "r-1", "http://{replica}.h:8080", "", 2},
		{"counted, one", "r-0", "http://{replica}.h:8080", "", 1},
		{"counted, beyond the set", "r-2", "http://{replica}.h:8080", "not one of 2 numbered 0 to 1", 2},
		{"counted, leading zero", "r-01", "http://{replica}.h:8080", "not one of", 2},
		{"counted, names without numbers", "alpha", "http://{replica}.h:8080", "end in their number", 2},
		{"counted, negative", "r-0", "http://{replica}.h:8080", "give 1 to", -1},
		{"counted, too many", "r-0", "http://{replica}.h:8080", "give 1 to", maxReplicas + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Replicas{Self: tc.self, PeerURL: tc.peer, Count: tc.count}.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestReplicasNames(t *testing.T) {
	require.Equal(t, []string{"rel-sandboxrun-0", "rel-sandboxrun-1", "rel-sandboxrun-2"}, Replicas{Self: "rel-sandboxrun-1", Count: 3}.names())
}

func TestReplicasPeer(t *testing.T) {
	c := Replicas{Self: "rel-sandboxrun-0", PeerURL: "http://{replica}.h.ns.svc.cluster.local:8080"}
	u, err := c.peer("rel-sandboxrun-12")
	require.NoError(t, err)
	require.Equal(t, "http://rel-sandboxrun-12.h.ns.svc.cluster.local:8080", u.String())
	c = Replicas{Self: "r-0", PeerURL: "http://127.0.0.1:1808{ordinal}/"}
	u, err = c.peer("r-1")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:18081", u.String())
}

func TestReplicasDecide(t *testing.T) {
	set := Replicas{Self: "rel-sandboxrun-1", PeerURL: "http://{replica}.h:8080"}
	named := Replicas{Self: "alpha", PeerURL: "http://{replica}.h:8080"}
	for _, tc := range []struct {
		name      string
		c         Replicas
		id        string
		forwarded bool
		route     route
		owner     string
	}{
		{"no session", set, "", false, serveHere, ""},
		{"single-server id", set, random, false, serveHere, ""},
		{"own", set, "rel-sandboxrun-1-" + random, false, serveHere, "rel-sandboxrun-1"},
		{"own, forwarded", set, "rel-sandboxrun-1-" + random, true, serveHere, "rel-sandboxrun-1"},
		{"sibling", set, "rel-sandboxrun-0-" + random, false, forward, "rel-sandboxrun-0"},
		{"sibling, five digits", set, "rel-sandboxrun-99999-" + random, false, forward, "rel-sandboxrun-99999"},
		{"sibling, forwarded again", set, "rel-sandboxrun-0-" + random, true, misdirected, "rel-sandboxrun-0"},
		{"another set", set, "other-0-" + random, false, serveHere, "other-0"},
		{"leading zero", set, "rel-sandboxrun-01-" + random, false, serveHere, "rel-sandboxrun-01"},
		{"six digits", set, "rel-sandboxrun-100000-" + random, false, serveHere, "rel-sandboxrun-100000"},
		{"no ordinal", set, "rel-sandboxrun--" + random, false, serveHere, ""},
		{"malformed", set, "rel-sandboxrun-0-" + random[:25], false, serveHere, ""},
		{"path-like", set, "../rel-sandboxrun-0-" + random, false, serveHere, ""},
		{"names without numbers", named, "beta-" + random, false, forward, "beta"},
		{"names without numbers, own", named, "alpha-" + random, false, serveHere, "alpha"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route, owner := tc.c.decide(tc.id, tc.forwarded)
			require.Equal(t, tc.route, route)
			require.Equal(t, tc.owner, owner)
		})
	}
}

// FuzzReplicasDecide: whatever an id says, a request is forwarded only to
// a sibling whose peer URL has this set's shape (the template with a DNS
// label, or a bounded number, in place), and an id this replica serves
// names it, nobody, or a name its store refuses.
func FuzzReplicasDecide(f *testing.F) {
	for _, s := range []string{"", random, "r-0-" + random, "r-1-" + random, "r-01-" + random, "r-x-" + random, "r-0/" + random} {
		f.Add(s, false)
	}
	c := Replicas{Self: "r-1", PeerURL: "http://{replica}.h.ns:8080"}
	f.Fuzz(func(t *testing.T, id string, forwarded bool) {
		how, owner := c.decide(id, forwarded)
		replica, ok := sandboxrun.ReplicaOf(id)
		if how == serveHere {
			if ok && replica != "" && replica != c.Self {
				require.False(t, c.sibling(replica))
			}
			return
		}
		require.True(t, ok)
		require.Equal(t, replica, owner)
		require.NotEqual(t, c.Self, owner)
		require.Equal(t, forwarded, how == misdirected)
		u, err := c.peer(owner)
		require.NoError(t, err)
		host, ok := strings.CutSuffix(u.Host, ".h.ns:8080")
		require.True(t, ok, u.Host)
		require.Equal(t, owner, host)
		require.LessOrEqual(t, len(ordinal(owner)), maxOrdinalDigits)
	})
}

func TestPeekSessionReplaysTheBody(t *testing.T) {
	for _, tc := range []struct {
		name, body, session string
	}{
		{"session", `{"script": "s.py", "session": "r-0-` + random + `"}`, "r-0-" + random},
		{"last of two wins, as in decodeBody", `{"session": "a", "session": "b", "script": "s.py"}`, "b"},
		{"case-folded key, as in decodeBody", `{"SESSION": "r-0-` + random + `", "script": "s.py"}`, "r-0-" + random},
		{"unknown field: refused here", `{"session": "r-0-` + random + `", "x": 1}`, ""},
		{"not JSON", `session`, ""},
		{"none", `{"script": "s.py"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/skills/x/run", strings.NewReader(tc.body))
			r.Pattern = "POST /v1/skills/{name}/run"
			require.Equal(t, tc.session, sessionOf(r))
			b, err := decodeBody(httptest.NewRecorder(), r, "script")
			if err == nil {
				require.Equal(t, tc.session, b.Session)
			}
		})
	}
	// Over the limit: nothing is peeked, and the body reaches the handler
	// whole, which refuses it for its size.
	big := `{"script": "s.py", "args": "` + strings.Repeat("x", maxBodyBytes) + `"}`
	r := httptest.NewRequest("POST", "/v1/skills/x/run", strings.NewReader(big))
	r.Pattern = "POST /v1/skills/{name}/run"
	require.Empty(t, sessionOf(r))
	got, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	require.Equal(t, big, string(got))
}

// A fork is made where its source lives: the "from" session of the body
// names the replica, and the body reaches it whole.
func TestForkGoesToItsSourcesReplica(t *testing.T) {
	for _, tc := range []struct{ body, session string }{
		{`{"from": {"session": "r-1-` + random + `"}}`, "r-1-" + random},
		{`{"from": {"session": "r-1-` + random + `", "snapshot": "s"}, "ttl": "5m"}`, "r-1-" + random},
		{`{"ttl": "5m"}`, ""},
		{``, ""},
		{`{"from": {"session": "r-1-` + random + `"}, "x": 1}`, ""},
	} {
		r := httptest.NewRequest("POST", "/v1/sessions", strings.NewReader(tc.body))
		r.Pattern = "POST /v1/sessions"
		require.Equal(t, tc.session, sessionOf(r), tc.body)
		got, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		require.Equal(t, tc.body, string(got))
	}
}

func TestUnreachable(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	require.True(t, unreachable(dial))
	require.True(t, unreachable(&url.Error{Op: "Get", Err: &net.DNSError{Err: "no such host", Name: "r-0.h"}}))
	require.False(t, unreachable(&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset")}))
	require.False(t, unreachable(io.ErrUnexpectedEOF))
	require.False(t, unreachable(http.ErrHandlerTimeout))
}

// TestReplicaNameIsTheService: the server's replica is the Service's, and
// a server told another name refuses to start rather than forward with it.
func TestReplicaNameIsTheService(t *testing.T) {
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Replica: "r-0", SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	_, err = New(Options{Service: svc, Replicas: &Replicas{PeerURL: "http://{replica}.peer"}})
	require.NoError(t, err, "Self defaults to the Service's")
	_, err = New(Options{Service: svc, Replicas: &Replicas{Self: "r-1", PeerURL: "http://{replica}.peer"}})
	require.ErrorContains(t, err, "the Service's is \"r-0\"")
}
