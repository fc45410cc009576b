package server_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// unclean are the segments a router would clean away or decode into
// another path; "" makes an empty segment, or a trailing '/' at the end.
var unclean = []string{"..", ".", "%2e%2e", "%2E%2E", "./..", "%2f", ""}

// world is a server with sessions and uploads on, holding one session (with
// a file and a snapshot) and one uploaded skill version, all of tokenA.
type world struct {
	url    string
	eng    *engine
	values map[string]string // a real value for each {param} of the API
}

func startWorld(t *testing.T) world {
	t.Helper()
	pol, err := policy.ParsePolicy("p.yaml", []byte(strings.ReplaceAll(uploadsOn, "STORE", t.TempDir())))
	require.NoError(t, err)
	eng := &engine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, Policy: pol, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	up := upload(t, ts.URL, tokenA, "application/x-tar", skillTar(t, greeter("greeter", "print(1)\n")), http.StatusCreated)
	id := newSession(t, ts.URL, tokenA)
	r := call(t, "PUT", ts.URL+"/v1/sessions/"+id+"/files/keep.txt", "kept", as(tokenA)...)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	r = call(t, "POST", ts.URL+"/v1/sessions/"+id+"/snapshots", "", as(tokenA)...)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var snap struct{ ID string }
	require.NoError(t, json.Unmarshal(r.body, &snap))
	return world{url: ts.URL, eng: eng, values: map[string]string{
		"name": up.Name, "version": up.Version, "id": id, "snap": snap.ID, "path": "keep.txt",
	}}
}

// requireIntact checks that what startWorld made is all still there.
func (w world) requireIntact(t *testing.T) {
	t.Helper()
	base := w.url + "/v1/sessions/" + w.values["id"]
	require.Equal(t, http.StatusOK, call(t, "GET", base, "", as(tokenA)...).status, "the session")
	r := call(t, "GET", base+"/files/keep.txt", "", as(tokenA)...)
	require.Equal(t, "kept", string(r.body), "the session's file")
	r = call(t, "GET", base+"/snapshots", "", as(tokenA)...)
	require.Contains(t, string(r.body), w.values["snap"], "the snapshot")
	r = call(t, "GET", w.url+"/v1/skills/"+w.values["name"]+"/versions", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `"`+w.values["version"]+`"`, "the skill version")
	require.Zero(t, w.eng.runs, "nothing ran")
}

// apiRoutes are the OpenAPI document's paths, each with its methods (a GET
// route takes HEAD too) and the statuses each documents; TestOpenAPIDocument
// holds every registered route to the document, so a new route is covered
// here without a change.
func apiRoutes(t *testing.T) map[string]map[string][]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(server.OpenAPI, &doc))
	routes := map[string]map[string][]string{}
	for p, item := range doc.Paths {
		routes[p] = map[string][]string{}
		for m, raw := range item {
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if m = strings.ToUpper(m); !slices.Contains([]string{"GET", "POST", "PUT", "DELETE", "PATCH"}, m) {
				continue
			}
			require.NoError(t, json.Unmarshal(raw, &op))
			statuses := slices.Collect(maps.Keys(op.Responses))
			routes[p][m] = statuses
			if m == "GET" {
				routes[p]["HEAD"] = statuses
			}
		}
	}
	require.GreaterOrEqual(t, len(routes), 19)
	return routes
}

var param = regexp.MustCompile(`\{[a-z]+\}`)

// rawPath is a path to send: the route's own, with an unclean parameter,
// or another made by adding a segment.
type rawPath struct {
	path    string
	inRoute bool
}

// rawPaths are a route's path with each unclean segment put in the place
// of each of its parameters in turn (the others filled with real values),
// and after its last segment.
func rawPaths(route string, values map[string]string) []rawPath {
	fill := func(skip int) string { return fillRoute(route, values, skip) }
	var out []rawPath
	n := len(param.FindAllString(route, -1))
	for _, seg := range unclean {
		for skip := range n {
			out = append(out, rawPath{strings.Replace(fill(skip), "\x00", seg, 1), true})
		}
		out = append(out, rawPath{fill(-1) + "/" + seg, false})
	}
	return out
}

// fillRoute puts values in a route's parameters, but NUL in its skip'th.
func fillRoute(route string, values map[string]string, skip int) string {
	i := -1
	return param.ReplaceAllStringFunc(route, func(p string) string {
		if i++; i == skip {
			return "\x00"
		}
		return values[strings.Trim(p, "{}")]
	})
}

// sendRaw sends path exactly as given (URL.Opaque: no cleaning, no
// re-encoding) and never follows a redirect.
func sendRaw(t *testing.T, base, method, path string) reply {
	t.Helper()
	req, err := http.NewRequest(method, base, strings.NewReader("{}"))
	require.NoError(t, err)
	req.URL.Opaque = path
	req.Header.Set("Authorization", "Bearer "+tokenA)
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestNoRouteRedirects: an id or a name that is '.', '..', empty or a
// percent-encoded separator is a 4xx on every route and method, never a
// redirect to the cleaned path (which a client following it with the
// same method, curl -L -X DELETE, would delete), and nothing is deleted.
func TestNoRouteRedirects(t *testing.T) {
	w := startWorld(t)
	sent, pairs, places := 0, 0, 0
	routes := apiRoutes(t)
	for route, methods := range routes {
		pairs += len(methods)
		places += len(param.FindAllString(route, -1)) + 1
		for _, raw := range rawPaths(route, w.values) {
			path := raw.path
			for method, documented := range methods {
				r := sendRaw(t, w.url, method, path)
				sent++
				require.Empty(t, r.header.Get("Location"), "%s %s", method, path)
				require.True(t, r.status >= 400 && r.status < 500, "%s %s: %d %s", method, path, r.status, r.body)
				if raw.inRoute {
					require.Contains(t, documented, strconv.Itoa(r.status), "%s %s: openapi.json names the status", method, route)
				}
				if method != "HEAD" {
					requireSchema(t, "Error", r.body)
				}
			}
		}
	}
	t.Logf("%d requests: %d routes (%d route-method pairs, HEAD with GET), %d places (each parameter and the end), %d unclean segments in each",
		sent, len(routes), pairs, places, len(unclean))
	require.GreaterOrEqual(t, sent, 450)

	// A clean path with a method its route does not take is no redirect
	// either (the router would send DELETE .../files to .../files/).
	others := 0
	for route, methods := range routes {
		path := fillRoute(route, w.values, -1)
		for _, method := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
			if _, ok := methods[method]; ok {
				continue
			}
			r := sendRaw(t, w.url, method, path)
			others++
			require.Empty(t, r.header.Get("Location"), "%s %s", method, path)
			require.True(t, r.status >= 400 && r.status < 500, "%s %s: %d %s", method, path, r.status, r.body)
		}
	}
	t.Logf("%d requests: a clean path with a method its route does not take", others)
	w.requireIntact(t)
}

// TestUncleanPathsAreNamed: the refusal says what is wrong with the path.
func TestUncleanPathsAreNamed(t *testing.T) {
	w := startWorld(t)
	s := "/v1/sessions/" + w.values["id"]
	for _, c := range []struct {
		method, path string
		status       int
		says         string
	}{
		{"DELETE", s + "/snapshots/..", 400, "never '.' or '..'"},
		{"DELETE", "/v1/skills/" + w.values["name"] + "/versions/..", 400, "never '.' or '..'"},
		{"DELETE", s + "/snapshots/%2E%2E", 400, "percent-encodes"},
		{"GET", s + "/", 400, "empty segment"},
		{"GET", "/v1/sessions//snapshots", 400, "empty segment"},
		{"DELETE", "/v1/skills/a%2fb", 400, "percent-encodes"},
		{"DELETE", s + "/files", 404, "redirects no request"},
		{"PUT", s + "/files/a/../keep.txt", 400, "bad path"},
	} {
		r := sendRaw(t, w.url, c.method, c.path)
		require.Equal(t, c.status, r.status, "%s %s: %s", c.method, c.path, r.body)
		require.Contains(t, string(r.body), c.says, "%s %s", c.method, c.path)
		requireSchema(t, "Error", r.body)
	}
	// A client that follows a 307 with the same method (Go's, curl -L)
	// would have deleted the session and the skill.
	for _, p := range []string{s + "/snapshots/..", "/v1/skills/" + w.values["name"] + "/versions/.."} {
		r := call(t, "DELETE", w.url+p, "", as(tokenA)...)
		require.Equal(t, http.StatusBadRequest, r.status, "DELETE %s: %s", p, r.body)
	}
	w.requireIntact(t)
}
