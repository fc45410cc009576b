package egress

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// interceptConfig fills the secrets, with fresh placeholders, the HTTP
// rules and the upstream roots from the run's decided egress.
func interceptConfig(cfg *Config, e *policy.Egress) error {
	secrets, err := secretsFor(e.Secrets)
	if err != nil {
		return err
	}
	cfg.Secrets = secrets
	for _, layer := range []struct {
		in  []egressrule.HTTPRule
		out *[]egressrule.HTTPRule
	}{{e.Rules, &cfg.Rules}, {e.SkillRules, &cfg.SkillRules}} {
		for _, r := range layer.in {
			r.Methods, r.Paths = slices.Clone(r.Methods), slices.Clone(r.Paths)
			if err := r.Check(); err != nil {
				return fmt.Errorf("egress rule %s: %w", r.Host, err)
			}
			*layer.out = append(*layer.out, r)
		}
	}
	if e.UpstreamCA == "" {
		return nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	b, err := os.ReadFile(e.UpstreamCA)
	if err != nil {
		return fmt.Errorf("egress.upstream_ca: %w", err)
	}
	if !roots.AppendCertsFromPEM(b) {
		return fmt.Errorf("egress.upstream_ca: %s holds no PEM certificate", e.UpstreamCA)
	}
	cfg.UpstreamRoots = roots
	return nil
}

// systemBundles are where Linux distributions keep the system's roots as
// one PEM file (the list crypto/x509 reads).
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// startAuthority creates the run's CA when it intercepts any host, and
// writes the sandbox's trust bundle next to the socket: the system's
// roots, for the hosts still tunnelled, and the run's CA.
func (p *Proxy) startAuthority() error {
	if len(p.cfg.Secrets) == 0 && len(p.cfg.Rules) == 0 && len(p.cfg.SkillRules) == 0 {
		return nil
	}
	ca, err := newAuthority(p.cfg.RunID)
	if err != nil {
		return err
	}
	var bundle []byte
	for _, f := range systemBundles {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			bundle = append(b, '\n')
			break
		}
	}
	bundle = append(bundle, ca.pem...)
	file := filepath.Join(p.dir, CAName)
	// Readable by the sandbox user: it is a certificate, not a key.
	if err := os.WriteFile(file, bundle, 0o644); err != nil { //nolint:gosec // G306: a public certificate bundle
		return fmt.Errorf("egress proxy: write the CA bundle: %w", err)
	}
	p.ca, p.caFile = ca, file
	return nil
}

// CAFile is the host path of the sandbox's trust bundle (the system's
// roots and the run's CA), or "" when the run intercepts no host.
func (p *Proxy) CAFile() string { return p.caFile }

// CACert is the run's CA certificate in PEM, or nil.
func (p *Proxy) CACert() []byte {
	if p.ca == nil {
		return nil
	}
	return p.ca.pem
}

// Placeholders are the variables the sandbox gets: each secret's name and
// its placeholder.
func (p *Proxy) Placeholders() map[string]string {
	if len(p.cfg.Secrets) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, s := range p.cfg.Secrets {
		m[s.Name] = s.Placeholder
	}
	return m
}
