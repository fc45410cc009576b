package skill

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
)

// name reads `name`. The spec's rules on the name are warnings whenever the
// skill loads (a user can still run what they downloaded) but errors in
// Validate with or without strict, because other hosts refuse such a skill
// and a validator exists to tell its author so. The skill still runs, under
// its name when that can be its folder in the sandbox (/skills/<name>,
// policy.ValidSandboxName), else under its folder's name (read decides,
// since only it knows the folder). The returned name is
// trimmed and NFKC-normalised, as the spec's reference validator compares it;
// "" when missing or not text.
func (d *decoder) name(n *yaml.Node) string {
	if isNull(n) {
		d.addLoud(sevError, nil, "`name` is missing; add `name:` with the skill's folder name (lowercase letters, digits and hyphens)")
		return ""
	}
	raw, ok := scalarText(n)
	if !ok {
		d.addLoud(sevError, n, "`name` is a YAML %s; it must be a string such as `my-skill`", kindName(n))
		return ""
	}
	name := normalizeName(raw)
	for _, msg := range nameRuleViolations(name) {
		d.addLoud(sevError, n, "%s", msg)
	}
	if trimmed := strings.TrimSpace(raw); trimmed != name && len(nameRuleViolations(name)) == 0 {
		d.add(sevWarn, n, "`name` %q is not NFKC-normalised; sandboxrun uses %q, write it that way", trimmed, name)
	}
	return name
}

// settleName makes sure m.Name can be the skill's folder in the sandbox,
// falling back to the folder's own name, and reports a name that differs
// from its folder. folder is the skill folder's base name.
func settleName(m *Manifest, folder string) []problem {
	var probs []problem
	if !policy.ValidSandboxName(m.Name) {
		alt := normalizeName(folder)
		if !policy.ValidSandboxName(alt) {
			return []problem{{sev: sevFatal, msg: where.Sprintf(
				"neither `name` %q nor the folder name %q can name the skill's folder in the sandbox; set `name:` to lowercase letters, digits and hyphens", m.Name, folder)}}
		}
		if m.Name != "" {
			probs = append(probs, problem{sev: sevError, loud: true, msg: where.Sprintf(
				"`name` %q cannot be a folder name in the sandbox; sandboxrun uses the folder name %q", m.Name, alt)})
		} else {
			probs = append(probs, problem{sev: sevWarn, loud: true, msg: where.Sprintf(
				"without a usable `name`, sandboxrun uses the folder name %q", alt)})
		}
		m.Name = alt
		return probs
	}
	if len(nameRuleViolations(m.Name)) == 0 && !folderMatches(folder, m.Name) {
		probs = append(probs, problem{sev: sevError, loud: true, msg: where.Sprintf(
			"`name` %q does not match the folder name %q; rename the folder to %q or set `name: %s` (sandboxrun finds the skill by either)", m.Name, folder, m.Name, folder)})
	}
	return probs
}

func normalizeName(s string) string {
	return norm.NFKC.String(strings.TrimSpace(s))
}

// nameRuleViolations checks an already normalised name against the spec:
// 1-64 characters, lowercase, only letters, digits and hyphens, no hyphen at
// either end and none doubled. Letters and digits are Unicode ones, like the
// reference validator's str.isalnum (so `技能` and `café` are valid names).
func nameRuleViolations(name string) []string {
	var out []string
	l := utf8.RuneCountInString(name)
	if l == 0 {
		return []string{"`name` is empty; set it to the skill's folder name (lowercase letters, digits and hyphens)"}
	}
	if l > maxNameLen {
		out = append(out, fmt.Sprintf("`name` is %d characters; the spec allows at most %d, shorten it (and the folder name)", l, maxNameLen))
	}
	if lower := strings.ToLower(name); lower != name {
		out = append(out, fmt.Sprintf("`name` %q must be lowercase; use %q (and rename the folder to match)", name, lower))
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		out = append(out, fmt.Sprintf("`name` %q must not start or end with a hyphen; remove it", name))
	}
	if strings.Contains(name, "--") {
		out = append(out, fmt.Sprintf("`name` %q must not contain `--`; use single hyphens", name))
	}
	var bad []string
	for _, r := range name {
		if r != '-' && !unicode.IsLetter(r) && !unicode.IsNumber(r) && !containsRune(bad, r) {
			bad = append(bad, string(r))
		}
	}
	if len(bad) > 0 {
		out = append(out, fmt.Sprintf("`name` %q contains %q; only letters, digits and hyphens are allowed (use `-` between words)", name, strings.Join(bad, "")))
	}
	return out
}

func containsRune(list []string, r rune) bool {
	for _, s := range list {
		if s == string(r) {
			return true
		}
	}
	return false
}

// folderMatches reports whether the skill's folder name equals its name,
// both NFKC-normalised, as the spec requires.
func folderMatches(folder, name string) bool {
	return norm.NFKC.String(folder) == name
}
