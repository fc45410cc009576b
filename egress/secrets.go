package egress

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// PlaceholderPrefix starts every placeholder, so one is recognisable in a
// log or a bug report as "not a credential".
const PlaceholderPrefix = "sandboxrun-secret-"

// ErrExfiltration marks a request refused because it carries a secret's
// placeholder where the proxy does not put the secret: to another host, in
// the URL or the body, over plain HTTP.
var ErrExfiltration = fmt.Errorf("%w: secret placeholder where the secret does not go", ErrDenied)

// Secret is one credential the proxy adds for a run. The sandbox holds
// Placeholder in the variable Name; the proxy puts Value in the configured
// header, or in basic auth, of requests to Hosts that carry the
// placeholder there, and nowhere else.
type Secret struct {
	Name        string
	Placeholder string
	Hosts       egressrule.Allowlist
	// Header names the header; empty means basic auth.
	Header string
	// Template is what the header's value becomes (after "Name:"), or
	// "user:password" for basic auth, with policy.ValueToken for the value.
	Template string
	Value    policy.SecretValue
}

// NewPlaceholder is a fresh placeholder: the prefix and 128 random bits.
func NewPlaceholder() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("egress proxy: placeholder: %w", err)
	}
	return PlaceholderPrefix + hex.EncodeToString(b), nil
}

// secretsFor turns the policy's granted secrets into the proxy's, each
// with a fresh placeholder.
func secretsFor(in []policy.EgressSecret) ([]Secret, error) {
	var out []Secret
	for _, s := range in {
		hosts, err := egressrule.ParseAllowlist(s.Hosts)
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", s.Name, err)
		}
		ph, err := NewPlaceholder()
		if err != nil {
			return nil, err
		}
		sec := Secret{Name: s.Name, Placeholder: ph, Hosts: hosts, Value: s.Value(), Template: s.Template()}
		if !s.BasicAuth {
			var err error
			if sec.Header, sec.Template, err = policy.SplitHeaderTemplate(s.Template()); err != nil {
				return nil, fmt.Errorf("secret %s: %w", s.Name, err)
			}
		}
		out = append(out, sec)
	}
	return out, nil
}

func (s *Secret) render() string {
	return strings.ReplaceAll(s.Template, policy.ValueToken, s.Value.Reveal())
}

// exfiltration is the refusal of a placeholder found where it may not go.
func exfiltration(s *Secret, where string, h egressrule.Host) error {
	return fmt.Errorf("%w: the placeholder of secret %s is in %s of a request to %s; the proxy puts a secret only in its configured header, and only to its hosts (%s)",
		ErrExfiltration, s.Name, where, h, strings.Join(s.Hosts.Strings(), ", "))
}

// applySecrets checks a request for placeholders and puts each secret in
// its place: the configured header, or basic auth, of a request over TLS
// to one of the secret's hosts. A placeholder anywhere else (the method,
// another header, a header's or a declared trailer's name, the URL, another host,
// plain HTTP) refuses the whole request; the body and the trailers' values
// are scanned as they stream (scanReader).
// It returns the names of the secrets applied.
func applySecrets(secrets []Secret, r *http.Request, h egressrule.Host, port uint16, overTLS bool) ([]string, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	uri := r.URL.RequestURI()
	decoded, _ := url.PathUnescape(uri)
	type change struct {
		s     *Secret
		key   string
		value string
	}
	var changes []change
	for i := range secrets {
		s := &secrets[i]
		if strings.Contains(uri, s.Placeholder) || strings.Contains(decoded, s.Placeholder) {
			return nil, exfiltration(s, "the URL", h)
		}
		if strings.Contains(r.Method, s.Placeholder) {
			return nil, exfiltration(s, "the method", h)
		}
		if where := inNames(s.Placeholder, r.Header, r.Trailer); where != "" {
			return nil, exfiltration(s, where, h)
		}
		mayApply := overTLS && s.Hosts.Match(h, port)
		for key, values := range r.Header {
			for _, v := range values {
				inValue := strings.Contains(v, s.Placeholder)
				inBasic := basicHolds(v, s.Placeholder)
				if !inValue && !inBasic {
					continue
				}
				switch {
				case mayApply && s.Header != "" && inValue && key == http.CanonicalHeaderKey(s.Header):
					changes = append(changes, change{s, key, s.render()})
				case mayApply && s.Header == "" && inBasic && key == "Authorization":
					changes = append(changes, change{s, key, "Basic " + base64.StdEncoding.EncodeToString([]byte(s.render()))})
				case !overTLS && s.Hosts.Match(h, port):
					return nil, fmt.Errorf("%w: the placeholder of secret %s is in a plain-HTTP request to %s; the proxy adds secrets only over HTTPS, so use https://", ErrExfiltration, s.Name, h)
				default:
					return nil, exfiltration(s, "the header "+key, h)
				}
			}
		}
	}
	var applied []string
	for _, c := range changes {
		r.Header.Set(c.key, c.value)
		applied = append(applied, c.s.Name)
	}
	return applied, nil
}

// inNames says where a placeholder is in the name of a header or of a
// declared trailer, or "" when it is in none: a secret never goes in a
// name. Names are compared without case, since the server reading the
// request canonicalises them ("Sandboxrun-Secret-...").
func inNames(placeholder string, header, trailer http.Header) string {
	for _, n := range []struct {
		h     http.Header
		where string
	}{{header, "the name of a header"}, {trailer, "the name of a trailer"}} {
		for key := range n.h {
			if strings.Contains(strings.ToLower(key), placeholder) {
				return n.where
			}
		}
	}
	return ""
}

// inTrailer says where a placeholder is in a request's trailer (its names
// or values), or "": a secret never goes in a trailer.
func inTrailer(placeholder string, trailer http.Header) string {
	if where := inNames(placeholder, nil, trailer); where != "" {
		return where
	}
	for key, values := range trailer {
		for _, v := range values {
			if strings.Contains(v, placeholder) || basicHolds(v, placeholder) {
				return "the trailer " + key
			}
		}
	}
	return ""
}

// basicHolds reports whether an Authorization value is basic auth whose
// credentials hold placeholder.
func basicHolds(v, placeholder string) bool {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	return err == nil && strings.Contains(string(raw), placeholder)
}

// needsSecret reports whether any secret goes to h:port.
func needsSecret(secrets []Secret, h egressrule.Host, port uint16) bool {
	for i := range secrets {
		if secrets[i].Hosts.Match(h, port) {
			return true
		}
	}
	return false
}
