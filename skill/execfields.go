package skill

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// Bounds on the execution fields. The timeout and memory floor are
// sandboxrun's absolute bounds (policy/limitcalc.go); the memory and CPU ceilings only keep the
// byte and nano-CPU values Docker is given from overflowing.
const (
	minTimeoutSec = 1
	maxTimeoutSec = 600
	minMemoryMiB  = 16
	maxMemoryMiB  = 1 << 20 // 1 TiB
	maxCPUs       = 1024
)

var execFieldNames = []string{
	"version", "max_execution_time", "max_memory", "max_cpus",
	"network_access", "allowed_domains", "python_packages", "system_packages", "runtime",
	"secrets", "disable-model-invocation", "when_to_use",
}

func isExecField(key string) bool { return slices.Contains(execFieldNames, key) }

// execFields reads each execution field from the top level and from
// metadata. When both are given they must agree (see doc.go).
func (d *decoder) execFields(top, meta []entry, m *Manifest) {
	for _, key := range execFieldNames {
		t, md := findEntry(top, key), findEntry(meta, key)
		switch {
		case t == nil:
		case md != nil:
			d.add(sevStrict, t.keyNode, "top-level `%s` repeats `metadata.%s`, and the top level is not in the Agent Skills spec; remove the top-level one", key, key)
		default:
			d.add(sevStrict, t.keyNode, "top-level `%s` is not in the Agent Skills spec; move it under `metadata:` as %s", key, metadataSuggestion(key, t.value))
		}
	}
	same := func(a, b string) bool { return a == b }
	readExec(d, top, meta, "version", parseVersion, same, &m.Version)
	readExec(d, top, meta, "max_execution_time", parseTimeout, func(a, b int) bool { return a == b }, &m.MaxExecutionTime)
	readExec(d, top, meta, "max_memory", parseMemory, func(a, b int64) bool { return a == b }, &m.MaxMemoryMiB)
	readExec(d, top, meta, "max_cpus", parseCPUs, func(a, b float64) bool { return a == b }, &m.MaxCPUs)
	readExec(d, top, meta, "network_access", parseBool, func(a, b bool) bool { return a == b }, &m.NetworkAccess)
	readExec(d, top, meta, "python_packages", parsePythonPackages, samePackages, &m.PythonPackages)
	readExec(d, top, meta, "system_packages", parseSystemPackages, samePackages, &m.SystemPackages)
	readExec(d, top, meta, "runtime", parseRuntime, same, &m.Runtime)
	readExec(d, top, meta, "allowed_domains", parseAllowedDomains, samePackages, &m.AllowedDomains)
	readExec(d, top, meta, "secrets", parseSecretNames, samePackages, &m.Secrets)
	readExec(d, top, meta, "disable-model-invocation", parseBool, func(a, b bool) bool { return a == b }, &m.DisableModelInvocation)
	readExec(d, top, meta, "when_to_use", parseWhenToUse, same, &m.WhenToUse)
	if len(m.Secrets) > 0 && !m.NetworkAccess {
		e := findEntry(meta, "secrets")
		if e == nil {
			e = findEntry(top, "secrets")
		}
		d.add(sevWarn, e.keyNode, "`secrets` has no effect without `network_access: true`: the egress proxy adds them to requests; set it, or remove the list")
	}
	if len(m.AllowedDomains) > 0 && !m.NetworkAccess {
		e := findEntry(meta, "allowed_domains")
		if e == nil {
			e = findEntry(top, "allowed_domains")
		}
		d.add(sevWarn, e.keyNode, "`allowed_domains` has no effect without `network_access: true`; set it, or remove the list")
	}
}

func findEntry(list []entry, key string) *entry {
	for i := range list {
		if list[i].key == key {
			return &list[i]
		}
	}
	return nil
}

// readExec parses one execution field in both spellings into *dst.
func readExec[T any](d *decoder, top, meta []entry, key string, parse func(*yaml.Node) (T, error), eq func(a, b T) bool, dst *T) {
	t, md := findEntry(top, key), findEntry(meta, key)
	var tv, mv T
	var tok, mok bool
	if t != nil && !isNull(t.value) {
		tv, tok = parseField(d, parse, t.value, key)
	}
	if md != nil && !isNull(md.value) {
		mv, mok = parseField(d, parse, md.value, "metadata."+key)
	}
	switch {
	case tok && mok && !eq(tv, mv):
		d.add(sevFatal, t.value, "`%s` (%s) and `metadata.%s` (line %d: %s) disagree; keep only `metadata.%s`",
			key, display(t.value), key, md.value.Line+d.lineOffset, display(md.value), key)
	case mok:
		*dst = mv
	case tok:
		*dst = tv
	}
}

func parseField[T any](d *decoder, parse func(*yaml.Node) (T, error), n *yaml.Node, spelled string) (T, bool) {
	v, err := parse(n)
	if err != nil {
		d.add(sevFatal, n, "`%s` %v", spelled, err)
		return v, false
	}
	return v, true
}

func samePackages(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// display shows a value the way it was written, for messages.
func display(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			return strconv.Quote(n.Value)
		}
		return n.Value
	case yaml.SequenceNode:
		return "[" + strings.Join(listTexts(n), ", ") + "]"
	default:
		return "a YAML " + kindName(n)
	}
}

func scalarOf(n *yaml.Node, what string) (string, error) {
	s, ok := scalarText(n)
	if !ok {
		return "", fmt.Errorf("is a YAML %s; it must be %s", kindName(n), what)
	}
	return strings.TrimSpace(s), nil
}

func parseVersion(n *yaml.Node) (string, error) {
	s, err := scalarOf(n, `a version string such as "1.0.0"`)
	if err == nil && s == "" {
		err = fmt.Errorf(`is empty; set a version string such as "1.0.0" or remove it`)
	}
	return s, err
}

func parseTimeout(n *yaml.Node) (int, error) {
	const want = `whole seconds from 1 to 600, e.g. "60"`
	s, err := scalarOf(n, want)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < minTimeoutSec || v > maxTimeoutSec {
		return 0, fmt.Errorf("is %q; it must be %s", s, want)
	}
	return v, nil
}

func parseMemory(n *yaml.Node) (int64, error) {
	const want = `a whole number of MiB, at least 16, e.g. "512"`
	s, err := scalarOf(n, want)
	if err != nil {
		return 0, err
	}
	// Frontmatter keeps to the bare form of the size grammar, a number of
	// MiB (package size): the form skills in the wild write, and the one
	// other readers of the same SKILL.md understand.
	if !size.IsBare(s) {
		return 0, fmt.Errorf("is %q; it must be %s (at most %d)", s, want, maxMemoryMiB)
	}
	v, err := size.ParseMiB(s)
	if err != nil || v < minMemoryMiB || v > maxMemoryMiB {
		return 0, fmt.Errorf("is %q; it must be %s (at most %d)", s, want, maxMemoryMiB)
	}
	return v, nil
}

// plainDecimal refuses what strconv.ParseFloat would also take but nobody
// means as a CPU count: NaN, Inf, exponents, hex floats, signs.
var plainDecimal = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$`)

func parseCPUs(n *yaml.Node) (float64, error) {
	const want = `a number of CPUs above 0, e.g. "1" or "0.5"`
	s, err := scalarOf(n, want)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if !plainDecimal.MatchString(s) || err != nil || v <= 0 || v > maxCPUs {
		return 0, fmt.Errorf("is %q; it must be %s (at most %d)", s, want, maxCPUs)
	}
	return v, nil
}

func parseBool(n *yaml.Node) (bool, error) {
	s, err := scalarOf(n, "true or false")
	if err != nil {
		return false, err
	}
	switch {
	case strings.EqualFold(s, "true"):
		return true, nil
	case strings.EqualFold(s, "false"):
		return false, nil
	}
	return false, fmt.Errorf("is %q; it must be true or false", s)
}

func parseRuntime(n *yaml.Node) (string, error) {
	want := "one of " + strings.Join(policy.Runtimes(), ", ")
	s, err := scalarOf(n, want)
	if err == nil && !slices.Contains(policy.Runtimes(), strings.ToLower(s)) {
		err = fmt.Errorf("is %q; it must be %s", s, want)
	}
	return s, err
}

// listItems reads a frontmatter field that is a YAML list of strings or
// one string of entries separated by whitespace and/or commas (the
// metadata spelling). item says what each entry must be, list what to
// write instead of another YAML kind; both end up in the error.
func listItems(n *yaml.Node, item, list string) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return strings.FieldsFunc(n.Value, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }), nil
	case yaml.SequenceNode:
		items := make([]string, 0, len(n.Content))
		for _, it := range n.Content {
			s, ok := scalarText(resolveAlias(it))
			if !ok {
				return nil, fmt.Errorf("has a list item that is not a string; each item must be %s", item)
			}
			items = append(items, s)
		}
		return items, nil
	default:
		return nil, fmt.Errorf("is a YAML %s; write a list of %s", kindName(n), list)
	}
}

// parseAllowedDomains reads the hosts a skill needs: a YAML list, or a
// string of entries separated by whitespace and/or commas (the metadata
// spelling). Each is an allowlist entry (egressrule.ParseDomainRule) and is kept
// in its canonical spelling.
func parseAllowedDomains(n *yaml.Node) ([]string, error) {
	items, err := listItems(n, "a host such as `api.example.com` or `*.example.com:8443`", `hosts, e.g. [api.example.com, "*.example.org"]`)
	if err != nil {
		return nil, err
	}
	list, err := egressrule.ParseAllowlist(items)
	if err != nil {
		return nil, fmt.Errorf("%w; write hosts such as `api.example.com`, `*.example.com` or `api.example.com:8443`", err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("is empty; list the hosts the skill needs, or remove it")
	}
	return list.Strings(), nil
}

// Package names end up as arguments to pip or apt when a per-skill image is
// built, so anything that could read as an option or carry shell syntax is
// refused here.
var (
	pythonPackage = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._\-\[\]<>=!~*+,]*$`)
	systemPackage = regexp.MustCompile(`^[a-z0-9][a-z0-9.+\-]*(?::[a-z0-9]+)?(?:=[A-Za-z0-9.+~:\-]+)?$`)
)

func parsePythonPackages(n *yaml.Node) ([]string, error) {
	return parsePackages(n, pythonPackage, "a pip requirement such as `requests` or `pandas>=2`")
}

func parseSystemPackages(n *yaml.Node) ([]string, error) {
	return parsePackages(n, systemPackage, "a Debian package name such as `libxml2` or `curl=7.88.1-10`")
}

// parsePackages takes a YAML list or a string of names separated by
// whitespace and/or commas (the metadata spelling).
func parsePackages(n *yaml.Node, valid *regexp.Regexp, want string) ([]string, error) {
	var items []string
	switch n.Kind {
	case yaml.ScalarNode:
		items = splitPackages(n.Value)
	case yaml.SequenceNode:
		// A list item is one requirement, commas and all ("foo>=1,<2");
		// spaces inside it ("foo >= 1") carry no meaning.
		for _, it := range n.Content {
			s, ok := scalarText(resolveAlias(it))
			if !ok {
				return nil, fmt.Errorf("has a list item that is not a string; each item must be %s", want)
			}
			if s = strings.Join(strings.Fields(s), ""); s != "" {
				items = append(items, s)
			}
		}
	default:
		return nil, fmt.Errorf("is a YAML %s; write a list or a space-separated string of names", kindName(n))
	}
	out := []string{}
	for _, p := range items {
		if !valid.MatchString(p) {
			return nil, fmt.Errorf("has %q, which is not %s", p, want)
		}
		out = append(out, p)
	}
	return out, nil
}

// splitPackages splits the metadata spelling, names separated by whitespace
// and/or commas, without cutting a requirement apart: a piece that starts
// with a version operator ("<2" in "foo>=1,<2"), or follows one that ends with
// it ("1" in "foo >= 1"), continues the requirement before it.
func splitPackages(s string) []string {
	var out []string
	var prevEndsOp bool
	for i, piece := range splitKeepingSeparators(s) {
		startsOp := strings.ContainsRune(versionOps, rune(piece.text[0]))
		if i > 0 && len(out) > 0 && (startsOp || prevEndsOp) {
			sep := ""
			if piece.afterComma && startsOp {
				sep = ","
			}
			out[len(out)-1] += sep + piece.text
		} else {
			out = append(out, piece.text)
		}
		prevEndsOp = strings.ContainsRune(versionOps, rune(piece.text[len(piece.text)-1]))
	}
	return out
}

// versionOps are the characters a pip version clause starts or ends with.
const versionOps = "<>=!~"

type packagePiece struct {
	text       string
	afterComma bool
}

// splitKeepingSeparators cuts s at commas and whitespace and remembers
// whether a comma came before each piece.
func splitKeepingSeparators(s string) []packagePiece {
	var pieces []packagePiece
	var b strings.Builder
	comma := false
	flush := func() {
		if b.Len() > 0 {
			pieces = append(pieces, packagePiece{text: b.String(), afterComma: comma})
			b.Reset()
			comma = false
		}
	}
	for _, r := range s {
		switch {
		case r == ',':
			flush()
			comma = true
		case unicode.IsSpace(r):
			flush()
		default:
			b.WriteRune(r)
		}
	}
	flush()
	return pieces
}
