package policy

import (
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// EgressSecret is a secret granted to one run: its name (the variable the
// sandbox finds its placeholder in), the hosts it goes to and how. JSON
// shows these, for the Result; the value and the template stay out.
type EgressSecret struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
	// Header is the header's name, or empty for basic auth.
	Header    string `json:"header,omitempty"`
	BasicAuth bool   `json:"basic_auth,omitempty"`

	template string
	value    SecretValue
}

// Template is "Name: template" for a header, "user:password" for basic
// auth, with ValueToken where the value goes.
func (s EgressSecret) Template() string { return s.template }

// Value is the credential.
func (s EgressSecret) Value() SecretValue { return s.value }

// NewEgressSecret builds a granted secret from its parts, for programs and
// tests that hold the credential themselves. template is as in
// SecretRule.Header, or SecretRule.BasicAuth when basicAuth.
func NewEgressSecret(name string, hosts []string, template string, basicAuth bool, value SecretValue) EgressSecret {
	s := EgressSecret{Name: name, Hosts: hosts, BasicAuth: basicAuth, template: template, value: value}
	if !basicAuth {
		s.Header, _, _ = SplitHeaderTemplate(template)
	}
	return s
}

// validateSecrets checks the secrets, the grants that name them, the
// egress rules and the upstream CA; getenv reads the process environment.
func (o *Operator) validateSecrets(getenv func(string) (string, bool)) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(o.Secrets)) {
		r := o.Secrets[name]
		if r == nil {
			errs = append(errs, fmt.Errorf("secrets.%s: empty; give from_env or from_file, hosts and header", name))
			continue
		}
		errs = append(errs, r.validate(name, getenv)...)
	}
	errs = append(errs, checkRules("egress.rules", o.Egress.Rules)...)
	if ca := o.Egress.UpstreamCA; ca.Set {
		if err := checkCAFile(ca.Value); err != nil {
			errs = append(errs, fmt.Errorf("line %d: egress.upstream_ca: %w", ca.Line, err))
		}
	}
	for _, skill := range o.skillNames() {
		g := o.Skills[skill]
		if g == nil {
			continue
		}
		for _, s := range g.Secrets.Value {
			if o.Secrets[s] == nil {
				errs = append(errs, fmt.Errorf("line %d: skills.%s.secrets: %q is not defined under secrets:; define it there first", g.Secrets.Line, skill, s))
			}
		}
		errs = append(errs, checkRules("skills."+skill+".egress_rules", g.EgressRules)...)
	}
	return errs
}

// maxCABytes bounds egress.upstream_ca: a few certificates, not a dump.
const maxCABytes = 1 << 20

// checkCAFile requires a readable PEM file with at least one certificate.
func checkCAFile(path string) error {
	f, err := openRegular(path)
	if err != nil {
		return fmt.Errorf("%w; point it at a PEM file of the CA that signs your internal hosts", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCABytes+1))
	switch {
	case err != nil:
		return err
	case len(b) > maxCABytes:
		return fmt.Errorf("%s is over %d bytes; give the CA certificates only", path, maxCABytes)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return fmt.Errorf("%s holds no PEM certificate", path)
	}
	return nil
}

// decideSecrets gives the run the secrets the skill declares and the
// operator grants it, when the run goes through the egress proxy, and the
// egress rules; what the skill declares but does not get is named in
// l.SecretsWithheld, with the reason in Sources["secrets"].
func (o *Operator) decideSecrets(skill string, s SkillLimits, l *Limits) {
	g := o.grants(skill)
	if l.Egress != nil {
		l.Egress.Rules = slices.Clone(o.Egress.Rules.Value)
		l.Egress.SkillRules = slices.Clone(g.EgressRules.Value)
		l.Egress.UpstreamCA = o.Egress.UpstreamCA.Value
	}
	if len(s.Secrets) == 0 {
		return
	}
	var given, why []string
	var allow egressrule.Allowlist
	if l.Egress != nil {
		allow, _ = egressrule.ParseAllowlist(l.Egress.Allow) // canonical entries, decided above
	}
	for _, name := range s.Secrets {
		r := o.Secrets[name]
		switch {
		case r == nil || !slices.Contains(g.Secrets.Value, name):
			why = append(why, name+" is not granted (policy skills."+skill+".secrets)")
		case l.Egress == nil:
			why = append(why, name+" needs the egress proxy, and this run has none (network off, or a full network)")
		case len(r.hosts.Intersect(allow)) == 0:
			why = append(why, fmt.Sprintf("none of %s's hosts (%s) is in this run's allowlist", name, strings.Join(r.hosts.Strings(), ", ")))
		default:
			es := EgressSecret{Name: name, Hosts: r.hosts.Strings(), BasicAuth: r.BasicAuth != "", value: r.value}
			es.template = r.BasicAuth
			if r.Header != "" {
				es.template = r.Header
				es.Header, _, _ = SplitHeaderTemplate(r.Header)
			}
			l.Egress.Secrets = append(l.Egress.Secrets, es)
			given = append(given, name)
			continue
		}
		l.SecretsWithheld = append(l.SecretsWithheld, name)
	}
	var parts []string
	if len(given) > 0 {
		parts = append(parts, "granted: "+strings.Join(given, ", "))
	}
	if len(why) > 0 {
		parts = append(parts, "withheld: "+strings.Join(why, "; "))
	}
	l.Sources["secrets"] = where.Plain(strings.Join(parts, "; "))
}

// secretEntries show the secrets (where each comes from, never its value),
// the upstream CA and the egress rules, for `policy show`.
func (o *Operator) secretEntries() []Entry {
	out := []Entry{
		{"egress.upstream_ca", or(o.Egress.UpstreamCA.Value, "none (the system's roots)"), o.Egress.UpstreamCA.from()},
		{"egress.rules", rulesText(o.Egress.Rules.Value), o.Egress.Rules.from()},
	}
	for _, name := range slices.Sorted(maps.Keys(o.Secrets)) {
		r := o.Secrets[name]
		from := "$" + r.FromEnv
		if r.FromFile != "" {
			from = r.FromFile
		}
		how := "header " + r.Header
		if r.BasicAuth != "" {
			how = "basic_auth " + r.BasicAuth
		}
		out = append(out, Entry{"secrets." + name, fmt.Sprintf("from %s to %s as %s", from, strings.Join(r.Hosts, ", "), how), fmt.Sprintf("line %d", r.Line)})
	}
	return out
}

func (g *Grants) secretEntries(prefix string) []Entry {
	var out []Entry
	if g.Secrets.Set {
		out = append(out, Entry{prefix + "secrets", listOr(g.Secrets.Value, "none"), g.Secrets.from()})
	}
	if g.EgressRules.Set {
		out = append(out, Entry{prefix + "egress_rules", rulesText(g.EgressRules.Value), g.EgressRules.from()})
	}
	return out
}

func rulesText(rules []egressrule.HTTPRule) string {
	if len(rules) == 0 {
		return "none"
	}
	s := make([]string, len(rules))
	for i, r := range rules {
		s[i] = r.String()
	}
	return strings.Join(s, "; ")
}

func or(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}
