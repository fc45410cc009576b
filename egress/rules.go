package egress

import (
	"fmt"
	"path"
	"strings"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// covered reports whether any rule of layer is about h:port.
func covered(layer []egressrule.HTTPRule, h egressrule.Host, port uint16) bool {
	for i := range layer {
		if layer[i].Covers(h, port) {
			return true
		}
	}
	return false
}

// checkRules lets a request through when, in each layer that has rules
// for its host, one of them allows its method and path. The path must be
// in its plain form (no dot segments, no doubled or encoded slashes), so
// the prefix the rule names is the resource the server serves.
func checkRules(layers [][]egressrule.HTTPRule, h egressrule.Host, port uint16, method, rawPath, decodedPath string) error {
	checkedPath := false
	for li, layer := range layers {
		if !covered(layer, h, port) {
			continue
		}
		if !checkedPath {
			if err := plainPath(rawPath, decodedPath); err != nil {
				return err
			}
			checkedPath = true
		}
		ok := false
		var rules []string
		for i := range layer {
			r := &layer[i]
			if !r.Covers(h, port) {
				continue
			}
			rules = append(rules, r.String())
			if r.Allows(method, decodedPath) {
				ok = true
				break
			}
		}
		if !ok {
			who := "the operator's egress.rules"
			if li > 0 {
				who = "the skill's egress_rules in the policy"
			}
			return fmt.Errorf("%w: %s %s to %s is outside %s (%s)", ErrDenied, method, decodedPath, h, who, strings.Join(rules, "; "))
		}
	}
	return nil
}

func plainPath(raw, decoded string) error {
	lower := strings.ToLower(raw)
	clean := path.Clean(decoded)
	if strings.HasSuffix(decoded, "/") && clean != "/" {
		clean += "/"
	}
	switch {
	case decoded == "" || decoded[0] != '/':
		return fmt.Errorf("%w: the path %q does not start with '/'", ErrDenied, raw)
	case strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(decoded, "\\"):
		return fmt.Errorf("%w: the path %q has an encoded slash or a backslash, which a rule on this host cannot judge", ErrDenied, raw)
	case clean != decoded:
		return fmt.Errorf("%w: the path %q has dot segments or doubled slashes; send it as %q", ErrDenied, raw, clean)
	case hasParamDotSegment(decoded):
		return fmt.Errorf("%w: the path %q has a dot segment with parameters (\"..;\"), which some servers resolve as \"..\"", ErrDenied, raw)
	}
	return nil
}

// hasParamDotSegment reports a segment that is "." or ".." once its
// ";parameters" are dropped, as Tomcat and other servlet containers read
// it: path.Clean keeps "..;" as an ordinary name.
func hasParamDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			if name := seg[:i]; name == "." || name == ".." {
				return true
			}
		}
	}
	return false
}
