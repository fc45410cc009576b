package egress

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/internal/testlog"
)

// A refused request whose path, host, method or reason carries a
// placeholder (as sent, or percent-encoded) leaves it in none of what
// outlives the run: the Result's record, the audit line (the same record
// as JSON), the observer's decisions and the logs. The sandbox's own
// answer still says why, in its words.
func TestRefusedPlaceholdersAreRedacted(t *testing.T) {
	logs := &testlog.Buffer{}
	var mu sync.Mutex
	var observed []egresslog.Decision
	s := setupIntercept(t, true,
		WithLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		WithObserver(func(d egresslog.Decision) { mu.Lock(); observed = append(observed, d); mu.Unlock() }))
	encoded := "%73" + strings.TrimPrefix(s.ph, "s") // "s" percent-encoded
	plainHostPort := strings.TrimPrefix(s.plain, "http://")

	refused := []struct {
		name, method, url, host string
		status                  int
	}{
		{"in the intercepted path", "GET", s.secure + "/repos/acme/public/" + s.ph, "", 403},
		{"in a path outside the rules", "GET", s.secure + "/repos/other/" + s.ph, "", 403},
		{"percent-encoded in a raw path", "GET", s.secure + "/repos/acme/public/%2e%2e/" + encoded, "", 403},
		{"in the Host of an intercepted request", "GET", s.secure + "/repos/acme/public/", s.ph + ".example.com", 403},
		{"in a plain-HTTP path", "GET", s.plain + "/" + s.ph, "", 403},
		{"in the path to a host outside the allowlist", "GET", "http://denied.test/" + s.ph, "", 403},
		{"as the method", s.ph, s.plain + "/", "", 403},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.url, nil)
			require.NoError(t, err)
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := s.c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tt.status, resp.StatusCode)
		})
	}
	status, _ := rawRequest(t, s.p, "GET /"+s.ph+" HTTP/1.1\r\nHost: "+plainHostPort+"\r\n\r\n")
	require.Equal(t, http.StatusBadRequest, status, "origin-form request")
	status, _ = rawRequest(t, s.p, "CONNECT "+s.ph+".test:443 HTTP/1.1\r\nHost: "+s.ph+".test:443\r\n\r\n")
	require.Equal(t, http.StatusForbidden, status, "a tunnel to a host named by the placeholder")
	require.NoError(t, s.p.Close())

	rec := s.p.Record()
	line, err := json.Marshal(rec)
	require.NoError(t, err)
	mu.Lock()
	seen := fmt.Sprintf("%+v", observed)
	mu.Unlock()
	for what, text := range map[string]string{"the record": fmt.Sprintf("%+v", rec), "the audit line": string(line), "the observer": seen, "the logs": logs.String()} {
		require.NotContains(t, text, "andboxrun-secret-aaaa", "%s holds the placeholder", what)
		require.NotContains(t, text, testSecret, "%s holds the secret", what)
		require.Contains(t, text, "[placeholder of GITHUB_TOKEN]", "%s says what was there", what)
	}
	require.Contains(t, logs.String(), `"path":"/repos/acme/public/[placeholder of GITHUB_TOKEN]"`)
	var paths []string
	for _, d := range rec.Decisions {
		if !d.Allowed && d.Path != "" {
			paths = append(paths, d.Method+" "+d.Path)
		}
	}
	require.Subset(t, paths, []string{"GET /repos/other/[placeholder of GITHUB_TOKEN]", "GET /[placeholder of GITHUB_TOKEN]", "[placeholder of GITHUB_TOKEN] /"})
	require.Equal(t, int64(3), rec.ExfiltrationAttempts, "the intercepted path, the plain path and the method; the rules and the Host refused the others first")
}

func TestRedactorFindsEncodedForms(t *testing.T) {
	r := newRedactor([]Secret{{Name: "T", Placeholder: PlaceholderPrefix + "ab12"}})
	for _, in := range []string{
		"x sandboxrun-secret-ab12 y",
		"x %73%61ndboxrun%2Dsecret-%61%6212 y",
		"x sandboxrun-secret-ab%312 y",
	} {
		require.Equal(t, "x [placeholder of T] y", r.string(in), in)
	}
	require.Equal(t, "sandboxrun-secret-AB12", r.string("sandboxrun-secret-AB12"), "not the placeholder: the check is exact too")
}
