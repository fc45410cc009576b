package policy

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// Built-in limits of the egress proxy, per run.
const (
	DefaultEgressConnections = 256
	DefaultEgressBytes       = 1 << 30
	DefaultEgressIdle        = 60 * time.Second
)

// Egress is the network of a run that goes through the egress proxy: the
// sandbox has only loopback, and the proxy reaches the hosts in Allow and
// nothing else. JSON field names are part of Result.limits.
type Egress struct {
	// Allow is the effective allowlist, canonical entries (see
	// ParseDomainRule).
	Allow []string `json:"allow"`
	// AllowCIDRs are the operator's address ranges that non-public
	// addresses (loopback, private, link-local...) and IP literals must be
	// in to be reached.
	AllowCIDRs []string `json:"allow_cidrs,omitempty"`
	// MaxConnections bounds the upstream connections the proxy opens for
	// the run; MaxBytes the bytes through them, both directions together.
	MaxConnections int64 `json:"max_connections"`
	MaxBytes       int64 `json:"max_bytes"`
	// IdleTimeout closes a connection with no traffic either way for that
	// long.
	IdleTimeout    time.Duration `json:"-"`
	IdleTimeoutSec float64       `json:"idle_timeout_s"`
	// Secrets are added by the proxy to requests to their hosts; the
	// sandbox holds only placeholders (secrets_decide.go).
	Secrets []EgressSecret `json:"secrets,omitempty"`
	// Rules are the operator's, SkillRules the skill's grant's: a request
	// to a host a layer has rules for must match one of them, in each
	// layer.
	Rules      []egressrule.HTTPRule `json:"rules,omitempty"`
	SkillRules []egressrule.HTTPRule `json:"skill_rules,omitempty"`
	// UpstreamCA is the operator's PEM file of extra roots for verifying
	// intercepted hosts.
	UpstreamCA string `json:"upstream_ca,omitempty"`
}

// EgressRules are the operator's settings of the egress proxy.
type EgressRules struct {
	// AllowCIDRs lists the address ranges (CIDR, or one address) the proxy
	// may reach although they are not public: loopback, private, link-local,
	// CGNAT, this host's own addresses. IP literals in requests must be in
	// one of them too.
	AllowCIDRs     Setting[[]string] `yaml:"allow_cidrs" json:"allow_cidrs"`
	MaxConnections Setting[Count]    `yaml:"max_connections" json:"max_connections"`
	MaxBytes       Setting[Size]     `yaml:"max_bytes" json:"max_bytes"`
	IdleTimeout    Setting[Duration] `yaml:"idle_timeout" json:"idle_timeout"`
	// UpstreamCA is a PEM file of extra roots the proxy trusts, beside the
	// system's, when it verifies an intercepted host (internal services).
	UpstreamCA Setting[string] `yaml:"upstream_ca" json:"upstream_ca"`
	// Rules limit methods and paths per host (httprules.go).
	Rules Setting[[]egressrule.HTTPRule] `yaml:"rules" json:"rules"`

	cidrs []netip.Prefix
}

func (e *EgressRules) setBuiltins() {
	e.MaxConnections.orBuiltin(Count(DefaultEgressConnections))
	e.MaxBytes.orBuiltin(Size(DefaultEgressBytes))
	e.IdleTimeout.orBuiltin(Duration(DefaultEgressIdle))
}

// validate parses the CIDRs; every error names its line.
func (e *EgressRules) validate() []error {
	var errs []error
	for _, c := range e.AllowCIDRs.Value {
		p, err := egressrule.ParseCIDR(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: egress.allow_cidrs: %w", e.AllowCIDRs.Line, err))
			continue
		}
		e.cidrs = append(e.cidrs, p)
	}
	return errs
}

// EgressCIDRs are the operator's allowed address ranges.
func (o *Operator) EgressCIDRs() []netip.Prefix { return o.Egress.cidrs }

// allowance is what the operator allows skill to reach: the global
// allowed_domains plus the skill's own grant.
func (o *Operator) allowance(skill string) (egressrule.Allowlist, string) {
	from := []string{}
	var list egressrule.Allowlist
	if o.AllowedDomains.Set {
		list = append(list, o.domains...)
		from = append(from, fmt.Sprintf("policy allowed_domains (line %d)", o.AllowedDomains.Line))
	}
	if g := o.grants(skill); g.AllowedDomains.Set {
		list = append(list, g.domains...)
		from = append(from, fmt.Sprintf("policy skills.%s.allowed_domains (line %d)", skill, g.AllowedDomains.Line))
	}
	if len(from) == 0 {
		return nil, "policy allowed_domains (not set: nothing)"
	}
	return list.Normalize(), strings.Join(from, " + ")
}

// decideNetwork sets l.Network (a full network), or l.Egress (the proxy
// and its allowlist), or neither, with Sources["network"] saying why.
//
// network_access is the skill's request for any network at all. Under
// none it gets nothing. Under allowlist it gets its allowed_domains held to
// the operator's allowance. Under declared it gets the full network when it
// names no hosts, and only those hosts when it does. The caller's
// --allow-domain narrows every case; nothing here widens.
func (o *Operator) decideNetwork(skill string, s SkillLimits, r Request, l *Limits) error {
	mode, from := o.network(skill)
	switch {
	case !s.Network:
		l.Sources["network"] = where.Plain("skill (no network_access)")
		return nil
	case mode == NetworkNone:
		l.Sources["network"] = where.Sprintf("off: %s is none (the skill asked for network_access)", from)
		return nil
	case mode == NetworkDeclared && len(s.AllowedDomains) == 0 && r.AllowDomains == nil:
		l.Network = true
		l.Sources["network"] = where.Sprintf("full network: skill network_access, allowed by %s", from)
		return nil
	}
	skillList, err := egressrule.ParseAllowlist(s.AllowedDomains)
	if err != nil {
		return fmt.Errorf("the skill's allowed_domains: %w", err)
	}
	var allow egressrule.Allowlist
	var steps []string
	unrestricted := true
	narrow := func(list egressrule.Allowlist, what string) {
		if unrestricted {
			allow, unrestricted = list, false
		} else {
			allow = allow.Intersect(list)
		}
		steps = append(steps, what)
	}
	if mode == NetworkAllowlist || len(s.AllowedDomains) > 0 {
		narrow(skillList, "skill allowed_domains")
	}
	if mode == NetworkAllowlist {
		op, opFrom := o.allowance(skill)
		narrow(op, opFrom)
	}
	if r.AllowDomains != nil {
		caller, _ := egressrule.ParseAllowlist(r.AllowDomains) // checked by Request.validate
		narrow(caller, "--allow-domain")
	}
	how := where.Sprintf("%s is %s: %s", from, mode, strings.Join(steps, " ∩ "))
	if len(allow) == 0 {
		l.Sources["network"] = where.Sprintf("off: the allowlist is empty (%s)", how)
		return nil
	}
	l.Egress = &Egress{
		Allow:          allow.Strings(),
		MaxConnections: int64(o.Egress.MaxConnections.Value),
		MaxBytes:       int64(o.Egress.MaxBytes.Value),
		IdleTimeout:    time.Duration(o.Egress.IdleTimeout.Value),
		IdleTimeoutSec: time.Duration(o.Egress.IdleTimeout.Value).Seconds(),
	}
	for _, c := range o.Egress.cidrs {
		l.Egress.AllowCIDRs = append(l.Egress.AllowCIDRs, c.String())
	}
	l.Sources["network"] = where.Sprintf("allowlist through the egress proxy (%s)", how)
	return nil
}

// checkRules checks a policy's rule list; errors name the key and line.
func checkRules(where string, s Setting[[]egressrule.HTTPRule]) []error {
	var errs []error
	for i := range s.Value {
		if err := s.Value[i].Check(); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %s[%d]: %w", s.Line, where, i, err))
		}
	}
	return errs
}
