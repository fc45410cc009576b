package policy

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// maxSecretBytes bounds a secret's value: a credential, not a document.
const maxSecretBytes = 16 << 10

// ValueToken is where a secret's value goes in a header or basic-auth
// template.
const ValueToken = "{value}"

// SecretRule is one credential the operator defines: where its value comes
// from (never the policy file itself), the hosts it may be sent to and how
// it is sent. The egress proxy applies it; the sandbox only ever holds a
// placeholder. JSON shows the rule, never the value.
type SecretRule struct {
	// FromEnv names a variable of the sandboxrun process; FromFile a file.
	// Exactly one is set.
	FromEnv  string `yaml:"from_env" json:"from_env,omitempty"`
	FromFile string `yaml:"from_file" json:"from_file,omitempty"`
	// Hosts are allowlist entries (as allowed_domains) the value may be
	// sent to.
	Hosts []string `yaml:"hosts" json:"hosts"`
	// Header is "Name: template", the template holding ValueToken, e.g.
	// "Authorization: Bearer {value}". BasicAuth is "user:password" with
	// ValueToken in either part. Exactly one is set.
	Header    string `yaml:"header" json:"header,omitempty"`
	BasicAuth string `yaml:"basic_auth" json:"basic_auth,omitempty"`
	// Line is the rule's line in the policy file.
	Line int `yaml:"-" json:"line"`

	hosts egressrule.Allowlist
	value SecretValue
}

var secretKeys = []string{"from_env", "from_file", "hosts", "header", "basic_auth"}

// UnmarshalYAML reads a rule strictly: an unknown key is an error, and an
// inline value is refused with the fix, so a credential never sits in a
// file that is shown, digested and copied around.
func (r *SecretRule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a secret is a mapping with from_env or from_file, hosts and header or basic_auth", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch {
		case k.Value == "value" || k.Value == "secret" || k.Value == "token":
			return fmt.Errorf("line %d: `%s` would put the credential in the policy file, which is refused; use from_env (a variable of the sandboxrun process) or from_file", k.Line, k.Value)
		case !slices.Contains(secretKeys, k.Value):
			return fmt.Errorf("line %d: unknown key `%s` (known: %s)", k.Line, k.Value, strings.Join(secretKeys, ", "))
		}
	}
	type plain SecretRule
	var p plain
	if err := n.Decode(&p); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = SecretRule(p)
	r.Line = n.Line
	return nil
}

// SecretValue holds a credential. It prints, logs and marshals as
// "[redacted]", so a value that reaches a format string, a logger or a
// JSON document by mistake shows nothing. The value sits behind a pointer
// because fmt prints the unexported fields of an enclosing struct without
// calling their methods, and a nested pointer as an address only.
type SecretValue struct{ v *string }

const redacted = "[redacted]"

// Reveal is the value itself, for the egress proxy's header only.
func (s SecretValue) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

func (s SecretValue) String() string { return redacted }

// GoString keeps %#v from printing the value.
func (s SecretValue) GoString() string { return redacted }

// MarshalJSON never writes the value.
func (s SecretValue) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText never writes the value (slog, encoding/*).
func (s SecretValue) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// NewSecretValue wraps v; for tests and programs that hold a credential
// themselves.
func NewSecretValue(v string) SecretValue { return SecretValue{v: &v} }

// validate checks one rule and reads its value; every error names the key.
func (r *SecretRule) validate(name string, getenv func(string) (string, bool)) []error {
	where := fmt.Sprintf("line %d: secrets.%s", r.Line, name)
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(where+format, a...)) }
	if !validEnvName(name) || IsReservedEnv(name) || slices.Contains(proxyEnvNames, strings.ToUpper(name)) || codeLoadingReason(name) != "" {
		add(": the name is the variable the skill reads its placeholder from; use letters, digits and '_' (not a name sandboxrun sets, e.g. GITHUB_TOKEN)")
	}
	var raw string
	switch {
	case (r.FromEnv == "") == (r.FromFile == ""):
		add(": set exactly one of from_env (a variable of the sandboxrun process) or from_file")
	case r.FromEnv != "":
		v, ok := getenv(r.FromEnv)
		if !ok || v == "" {
			add(".from_env: $%s is not set in sandboxrun's environment; export it before starting sandboxrun, or use from_file", r.FromEnv)
		}
		raw = v
	default:
		b, err := readSecretFile(r.FromFile)
		if err != nil {
			add(".from_file: %v", err)
		}
		raw = string(b)
	}
	if raw != "" {
		if err := checkSecretValue(raw); err != nil {
			add(": the value %v", err)
		}
		r.value = NewSecretValue(raw)
	}
	if len(r.Hosts) == 0 {
		add(".hosts: empty; list the hosts the secret may be sent to, e.g. [api.github.com]")
	}
	for _, h := range r.Hosts {
		d, err := egressrule.ParseDomainRule(h)
		if err != nil {
			add(".hosts: %v", err)
			continue
		}
		r.hosts = append(r.hosts, d)
	}
	r.hosts = r.hosts.Normalize()
	switch {
	case (r.Header == "") == (r.BasicAuth == ""):
		add(": set exactly one of header (\"Authorization: Bearer {value}\") or basic_auth (\"user:{value}\")")
	case r.Header != "":
		if _, _, err := SplitHeaderTemplate(r.Header); err != nil {
			add(".header: %v", err)
		}
	default:
		if u, p, ok := strings.Cut(r.BasicAuth, ":"); !ok || !strings.Contains(u+p, ValueToken) || strings.Contains(u, ":") {
			add(".basic_auth: %q must be user:password with %s in one part, e.g. \"api:{value}\"", r.BasicAuth, ValueToken)
		}
	}
	return errs
}

// proxyEnvNames are set by sandboxrun for a run through the egress proxy.
var proxyEnvNames = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
	"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"}

func readSecretFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("%w; point it at a readable file holding only the credential", err)
	}
	defer f.Close()
	b := make([]byte, maxSecretBytes+1)
	n, _ := f.Read(b)
	if n > maxSecretBytes {
		return nil, fmt.Errorf("%s is over %d bytes; it must hold only the credential", path, maxSecretBytes)
	}
	// Files written by editors and echo end in a newline nobody means.
	return []byte(strings.TrimRight(string(b[:n]), "\r\n")), nil
}

// openRegular opens path when it is a regular file (links followed): a
// FIFO or a device would hang or never end the policy's loading.
func openRegular(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.Open(path)
}

// checkSecretValue refuses what cannot go in an HTTP header: control
// characters would split or end it.
func checkSecretValue(v string) error {
	if strings.ContainsFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
		return fmt.Errorf("has a control character (a newline inside?), which cannot go in an HTTP header")
	}
	return nil
}

// SplitHeaderTemplate reads "Name: template" into the header's name and
// the template, which must hold ValueToken.
func SplitHeaderTemplate(s string) (name, template string, err error) {
	name, template, ok := strings.Cut(s, ":")
	name, template = strings.TrimSpace(name), strings.TrimSpace(template)
	switch {
	case !ok || name == "" || !isToken(name):
		return "", "", fmt.Errorf("%q must be \"Name: template\", e.g. \"Authorization: Bearer {value}\"", s)
	case !strings.Contains(template, ValueToken):
		return "", "", fmt.Errorf("%q has no %s where the value goes", s, ValueToken)
	case slices.Contains(unsettableHeaders, strings.ToLower(name)):
		return "", "", fmt.Errorf("%q: the proxy or the transport sets %s itself; name the header the API reads the credential from", s, name)
	}
	return name, template, nil
}

var unsettableHeaders = []string{"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive", "proxy-authorization", "proxy-connection"}

// isToken reports whether s is an HTTP token (RFC 9110 5.6.2).
func isToken(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return r > 0x7e || r <= 0x20 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	})
}
