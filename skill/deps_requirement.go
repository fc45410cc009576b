package skill

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalidRequirement means a Python requirement or Debian package name
// is not one sandboxrun will hand to pip or apt.
var ErrInvalidRequirement = errors.New("invalid package requirement")

// maxRequirementLen bounds one requirement; real ones are far shorter.
const maxRequirementLen = 256

// Pieces of a PEP 508 requirement, the subset sandboxrun accepts: a name,
// optional extras, optional version clauses and an optional environment
// marker. Direct references (`name @ URL`) are refused because they would
// bypass the configured package sources and the image hash would not see
// what the URL serves.
var (
	reqName    = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?`)
	reqClause  = regexp.MustCompile(`^(~=|===|==|!=|<=|>=|<|>)\s*([A-Za-z0-9.*+!_-]+)$`)
	reqMarker  = regexp.MustCompile(`^[A-Za-z0-9_.'" <>=!~(),*+-]+$`)
	nameRunsRe = regexp.MustCompile(`[-_.]+`)
)

// CanonicalRequirement checks a pip requirement such as `requests`,
// `pandas>=2,<3`, `rich[jupyter]==13.7.1` or `tomli; python_version < "3.11"`
// and returns it in canonical form: the name lowercased with runs of `-_.`
// made one `-` (PEP 503), extras sorted, version clauses sorted and without
// spaces. Two spellings of one requirement canonicalise to the same string,
// which keeps the skill image's hash stable. Anything that could read as a
// pip option, a file, a URL or shell syntax is an error matching
// ErrInvalidRequirement that says what to write instead.
func CanonicalRequirement(s string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: %q %s", ErrInvalidRequirement, s, fmt.Sprintf(format, args...))
	}
	if len(s) > maxRequirementLen {
		return bad("is longer than %d bytes", maxRequirementLen)
	}
	rest := strings.TrimSpace(s)
	if rest == "" {
		return bad("is empty; write a package name such as `requests`")
	}
	if strings.HasPrefix(rest, "-") {
		return bad("starts with '-' and would be read as a pip option; give a package name such as `requests`")
	}
	spec, marker, hasMarker := strings.Cut(rest, ";")
	name := reqName.FindString(spec)
	if name == "" {
		return bad("does not start with a package name (letters, digits, `-`, `_`, `.`)")
	}
	canon := strings.ToLower(nameRunsRe.ReplaceAllString(name, "-"))
	spec = strings.TrimSpace(spec[len(name):])

	if strings.HasPrefix(spec, "[") {
		end := strings.IndexByte(spec, ']')
		if end < 0 {
			return bad("has `[` without `]`; write extras as name[extra1,extra2]")
		}
		var extras []string
		for _, e := range strings.Split(spec[1:end], ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			if reqName.FindString(e) != e {
				return bad("has the extra %q, which is not a valid name", e)
			}
			extras = append(extras, strings.ToLower(nameRunsRe.ReplaceAllString(e, "-")))
		}
		slices.Sort(extras)
		extras = slices.Compact(extras)
		if len(extras) > 0 {
			canon += "[" + strings.Join(extras, ",") + "]"
		}
		spec = strings.TrimSpace(spec[end+1:])
	}

	if strings.HasPrefix(spec, "@") {
		return bad("is a direct reference (name @ URL); put the wheel in a folder and build with --find-links instead")
	}
	if strings.HasPrefix(spec, "(") && strings.HasSuffix(spec, ")") {
		spec = strings.TrimSpace(spec[1 : len(spec)-1])
	}
	if spec != "" {
		var clauses []string
		for _, c := range strings.Split(spec, ",") {
			c = strings.TrimSpace(c)
			m := reqClause.FindStringSubmatch(c)
			if m == nil {
				return bad("has the version clause %q; write clauses like `>=1.2`, `==2.0.*` or `~=3.1`, separated by commas", c)
			}
			clauses = append(clauses, m[1]+m[2])
		}
		slices.Sort(clauses)
		canon += strings.Join(slices.Compact(clauses), ",")
	}

	if hasMarker {
		marker = strings.Join(strings.Fields(marker), " ")
		if marker == "" || !reqMarker.MatchString(marker) || strings.Count(marker, `"`)%2 != 0 || strings.Count(marker, "'")%2 != 0 {
			return bad("has an environment marker sandboxrun cannot pass on safely; write one like `; python_version < \"3.12\"`")
		}
		canon += "; " + marker
	}
	return canon, nil
}

// CheckSystemPackage checks a Debian package name, optionally with an
// architecture qualifier and a version (`libxml2`, `curl=7.88.1-10`). It
// is the rule the frontmatter's system_packages is read with; an error
// matches ErrInvalidRequirement.
func CheckSystemPackage(s string) error {
	if len(s) > maxRequirementLen || !systemPackage.MatchString(s) {
		return fmt.Errorf("%w: %q is not a Debian package name such as `libxml2` or `curl=7.88.1-10` (lowercase letters, digits, `+`, `-`, `.`)", ErrInvalidRequirement, s)
	}
	return nil
}
