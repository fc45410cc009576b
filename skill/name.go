package skill

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"gopkg.in/yaml.v3"
)

// name reads `name`. Every spec rule on the name itself is fatal: the name
// becomes the skill's directory inside the sandbox (/skills/<name>), so
// nothing but letters, digits and single inner hyphens may reach it. The
// returned name is trimmed and NFKC-normalised, as the spec's reference
// validator compares it.
func (d *decoder) name(n, root *yaml.Node) string {
	if isNull(n) {
		d.add(sevFatal, nil, "`name` is missing; add `name:` with the skill's folder name (lowercase letters, digits and hyphens)")
		return ""
	}
	raw, ok := scalarText(n)
	if !ok {
		d.add(sevFatal, n, "`name` is a YAML %s; it must be a string such as `my-skill`", kindName(n))
		return ""
	}
	name := normalizeName(raw)
	for _, msg := range nameRuleViolations(name) {
		d.add(sevFatal, n, "%s", msg)
	}
	if trimmed := strings.TrimSpace(raw); trimmed != name && len(nameRuleViolations(name)) == 0 {
		d.add(sevWarn, n, "`name` %q is not NFKC-normalised; sandboxrun uses %q, write it that way", trimmed, name)
	}
	return name
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
