package egressrule

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// HTTPRule limits the requests the egress proxy lets through to the hosts
// it matches: the methods and path prefixes allowed. An empty list allows
// any. A host with a rule is intercepted (TLS is terminated by the proxy),
// so the rule sees each request, not only the tunnel.
type HTTPRule struct {
	// Host is an allowlist entry (as allowed_domains).
	Host    string   `yaml:"host" json:"host"`
	Methods []string `yaml:"methods" json:"methods,omitempty"`
	// Paths are prefixes of the request's path, each starting with '/'.
	Paths []string `yaml:"paths" json:"paths,omitempty"`

	rule DomainRule
}

var httpRuleKeys = []string{"host", "methods", "paths"}

var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// UnmarshalYAML reads a rule strictly: an unknown key is an error.
func (r *HTTPRule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a rule is a mapping: {host: api.example.com, methods: [GET], paths: [/v1/]}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(httpRuleKeys, k.Value) {
			return fmt.Errorf("line %d: unknown key `%s` in a rule (known: %s)", k.Line, k.Value, strings.Join(httpRuleKeys, ", "))
		}
	}
	type plain HTTPRule
	var p plain
	if err := n.Decode(&p); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = HTTPRule(p)
	return nil
}

// Check parses the host and checks methods and paths; it must be called
// before Covers or Allows.
func (r *HTTPRule) Check() error {
	d, err := ParseDomainRule(r.Host)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	r.rule = d
	for i, m := range r.Methods {
		up := strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(httpMethods, up) {
			return fmt.Errorf("method %q: use one of %s", m, strings.Join(httpMethods, ", "))
		}
		r.Methods[i] = up
	}
	for _, p := range r.Paths {
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "/../") || strings.Contains(p, "/./") || strings.ContainsAny(p, "?#%") {
			return fmt.Errorf("path %q: write a plain path prefix starting with '/', e.g. /repos/acme/", p)
		}
	}
	return nil
}

// Covers reports whether the rule is about host h on port.
func (r *HTTPRule) Covers(h Host, port uint16) bool { return r.rule.Match(h, port) }

// Allows reports whether the rule lets method on path through. path must
// already be clean (the proxy refuses paths that are not).
func (r *HTTPRule) Allows(method, path string) bool {
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
		return false
	}
	if len(r.Paths) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Paths, func(p string) bool { return underPrefix(path, p) })
}

// underPrefix reports whether path is p or lies below it, by whole
// segments: "/repos/acme" covers "/repos/acme/x" but not "/repos/acme-evil".
func underPrefix(path, p string) bool {
	if !strings.HasPrefix(path, p) {
		return false
	}
	return len(path) == len(p) || strings.HasSuffix(p, "/") || path[len(p)] == '/'
}

func (r HTTPRule) String() string {
	s := r.Host
	if len(r.Methods) > 0 {
		s += " methods " + strings.Join(r.Methods, ",")
	}
	if len(r.Paths) > 0 {
		s += " paths " + strings.Join(r.Paths, ",")
	}
	return s
}
