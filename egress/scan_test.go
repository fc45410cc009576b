package egress

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// chunked reads data in pieces of the sizes cut gives, cycling.
type chunked struct {
	data []byte
	cut  []byte
	i    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.cut) > 0 {
		n = int(c.cut[c.i%len(c.cut)])%17 + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunked) Close() error { return nil }

func FuzzScanReader(f *testing.F) {
	f.Add([]byte("hello sandboxrun-secret-aaaa world"), []byte{3, 1, 7})
	f.Add([]byte("sandboxrun-secret-aaa"), []byte{1})
	f.Add([]byte("xxsandboxrun-secret-bbbb"), []byte{16, 2})
	f.Fuzz(func(t *testing.T, data, cut []byte) {
		secrets := []Secret{{Name: "A", Placeholder: PlaceholderPrefix + "aaaa"}, {Name: "B", Placeholder: PlaceholderPrefix + "bbbb"}}
		s := newScanReader(&chunked{data: data, cut: cut}, secrets, nil)
		got, err := io.ReadAll(s)
		want := bytes.Contains(data, []byte(secrets[0].Placeholder)) || bytes.Contains(data, []byte(secrets[1].Placeholder))
		if want {
			if !errors.Is(err, ErrExfiltration) || s.found() == nil {
				t.Fatalf("placeholder in %q not found (err %v)", data, err)
			}
			for _, sec := range secrets {
				if bytes.Contains(got, []byte(sec.Placeholder)) {
					t.Fatalf("a whole placeholder passed: %q", got)
				}
			}
			return
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("clean body changed: %q -> %q (%v)", data, got, err)
		}
	})
}

func FuzzMaskReader(f *testing.F) {
	f.Add([]byte("auth=Bearer s3cr3t-value and s3cr3t-value"), []byte{5, 1})
	f.Add([]byte("s3cr3t-vals3cr3t-value"), []byte{2})
	f.Fuzz(func(t *testing.T, data, cut []byte) {
		vals := [][]byte{[]byte("s3cr3t-value"), []byte("other")}
		got, err := io.ReadAll(newMaskReader(&chunked{data: data, cut: cut}, vals))
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(data)
		mask(want, vals)
		if !bytes.Equal(got, want) || len(got) != len(data) {
			t.Fatalf("masked %q as %q, want %q", data, got, want)
		}
		for _, v := range vals {
			if bytes.Contains(got, v) {
				t.Fatalf("%q still holds %q", got, v)
			}
		}
	})
}

func TestMaskReaderStreams(t *testing.T) {
	r := newMaskReader(io.NopCloser(iotest.OneByteReader(strings.NewReader("a s3cr3t b"))), [][]byte{[]byte("s3cr3t")})
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "a ****** b", string(got))
}

// FuzzApplySecrets: whatever the sandbox sends, a request that passes
// carries no placeholder (in a header's value or name, or the URL), and
// the value only in the configured header of
// a request over TLS to the secret's host.
func FuzzApplySecrets(f *testing.F) {
	ph := PlaceholderPrefix + "cccc"
	f.Add("example.com", "Authorization", "Bearer "+ph, "/x", true)
	f.Add("evil.test", "Authorization", "Bearer "+ph, "/x", true)
	f.Add("example.com", "X-Key", ph, "/x", true)
	f.Add("example.com", "Authorization", "Basic c2FuZGJveHJ1bi1zZWNyZXQtY2NjYw==", "/x", true)
	f.Add("example.com", "Authorization", "Bearer x", "/"+url.PathEscape(ph), false)
	f.Add("example.com", "X-"+ph, "1", "/x", true)
	f.Fuzz(func(t *testing.T, host, key, value, path string, overTLS bool) {
		h, err := egressrule.ParseHost(host)
		if err != nil {
			return
		}
		u, err := url.Parse("https://" + host + path)
		if err != nil {
			return
		}
		r := &http.Request{URL: u, Header: http.Header{}}
		r.Header[http.CanonicalHeaderKey(key)] = []string{value}
		secrets := []Secret{{Name: "T", Placeholder: ph, Hosts: egressrule.Allowlist{{Name: "example.com"}},
			Header: "Authorization", Template: "Bearer {value}", Value: policy.NewSecretValue("VALUE-xyz")}}
		applied, err := applySecrets(secrets, r, h, 443, overTLS)
		if err != nil {
			return
		}
		for k, vs := range r.Header {
			if strings.Contains(strings.ToLower(k), ph) {
				t.Fatalf("placeholder passed in the name %q", k)
			}
			for _, v := range vs {
				if strings.Contains(v, ph) || basicHolds(v, ph) {
					t.Fatalf("placeholder passed in %s: %q", k, v)
				}
				if strings.Contains(v, "VALUE-xyz") && (k != "Authorization" || !overTLS || h.Name != "example.com") {
					t.Fatalf("value put in %s to %s (tls %v)", k, h, overTLS)
				}
			}
		}
		if strings.Contains(u.RequestURI(), ph) {
			t.Fatalf("placeholder passed in the URL %q", u)
		}
		if len(applied) > 0 && r.Header.Get("Authorization") != "Bearer VALUE-xyz" {
			t.Fatalf("applied %v but Authorization is %q", applied, r.Header.Get("Authorization"))
		}
	})
}
