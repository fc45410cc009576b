package egress

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// seenAll is an upstream that keeps every header and trailer it was sent.
type seenAll struct {
	mu  sync.Mutex
	all []string
}

func (s *seenAll) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	s.mu.Lock()
	s.all = append(s.all, fmt.Sprint(r.Method, r.URL, r.Header, r.Trailer, string(b), err))
	s.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (s *seenAll) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.all, "\n")
}

// A placeholder in a header's name, in a trailer's name or value, is where
// the secret never goes: the request is refused as an exfiltration, like
// one in another header's value, and the host never gets it.
func TestPlaceholderInANameIsRefused(t *testing.T) {
	up := &seenAll{}
	p, c, base, ph := interceptOne(t, up)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+ph))
	tests := []struct {
		name    string
		header  http.Header
		trailer http.Header
		reason  string
	}{
		{"in a header's name", http.Header{"X-" + ph: {"1"}}, nil, "is in the name of a header"},
		{"in a canonical header's name", http.Header{http.CanonicalHeaderKey(ph): {"1"}}, nil, "is in the name of a header"},
		{"in a trailer's name", nil, http.Header{"X-" + ph: {"1"}}, "is in the name of a trailer"},
		{"in a trailer's value", nil, http.Header{"X-Sig": {"t=" + ph}}, "is in the trailer X-Sig"},
		{"in a trailer named as the secret's header", nil, http.Header{"Authorization": {"Bearer " + ph}}, "is in the trailer Authorization"},
		{"basic credentials in a trailer", nil, http.Header{"X-Auth": {basic}}, "is in the trailer X-Auth"},
		{"nowhere", nil, http.Header{"X-Sig": {"fine"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A streamed body, so the trailers follow it.
			req, err := http.NewRequest("POST", base+"/upload", io.MultiReader(strings.NewReader("data")))
			require.NoError(t, err)
			req.ContentLength = -1
			for k, v := range tt.header {
				req.Header[k] = v
			}
			req.Trailer = tt.trailer
			resp, err := c.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.reason == "" {
				require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
				require.Contains(t, up.String(), "map[X-Sig:[]]", "a trailer's name is passed on, not its value (docs/secrets.md)")
				return
			}
			require.Equal(t, http.StatusForbidden, resp.StatusCode, string(b))
			require.Contains(t, string(b), tt.reason)
			require.Contains(t, string(b), "secret T")
		})
	}
	require.NoError(t, p.Close())
	require.NotContains(t, strings.ToLower(up.String()), ph, "the host never got a placeholder")
	requireNoValue(t, up.String())
	rec := p.Record()
	require.Equal(t, int64(len(tests)-1), rec.ExfiltrationAttempts)
	for _, d := range rec.Decisions {
		require.False(t, d.Exfiltration && d.Allowed, "an exfiltration is never allowed: %+v", d)
	}
}

// The same on the plain-HTTP path, where a secret never goes at all.
func TestPlainHTTPNamesAreScanned(t *testing.T) {
	s := setupIntercept(t, true)
	status, body := do(t, s.c, "GET", s.plain+"/", http.Header{"X-" + s.ph: {"1"}}, "")
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, body, "is in the name of a header")
	req, err := http.NewRequest("POST", s.plain+"/", io.MultiReader(strings.NewReader("data")))
	require.NoError(t, err)
	req.Trailer = http.Header{"X-Sig": {s.ph}}
	resp, err := s.c.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, string(b))
	require.Contains(t, string(b), "is in the trailer X-Sig")
	require.NotContains(t, s.log.all(), s.ph)
}
