package skill

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
)

// Manifest is the frontmatter of a SKILL.md. Execution fields hold their
// parsed value whichever of the two spellings (top level or under metadata)
// gave them; zero means "not set".
type Manifest struct {
	// Spec fields.
	Name          string            `json:"name"`
	Description   string            `json:"description"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	// AllowedToolsRaw is allowed-tools as written; a YAML list is joined with
	// spaces. AllowedTools is its parsed form.
	AllowedToolsRaw string          `json:"allowed_tools,omitempty"`
	AllowedTools    bashcheck.Tools `json:"-"`

	// Execution fields.
	Version string `json:"version,omitempty"`
	// MaxExecutionTime is in whole seconds, 1-600.
	MaxExecutionTime int `json:"max_execution_time,omitempty"`
	// MaxMemoryMiB is in MiB, at least 16.
	MaxMemoryMiB  int64   `json:"max_memory,omitempty"`
	MaxCPUs       float64 `json:"max_cpus,omitempty"`
	NetworkAccess bool    `json:"network_access,omitempty"`
	// AllowedDomains are the hosts the skill needs, canonical allowlist
	// entries; the operator's policy decides what it actually reaches.
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	PythonPackages []string `json:"python_packages,omitempty"`
	SystemPackages []string `json:"system_packages,omitempty"`
	// Runtime overrides the interpreter chosen from a script's extension.
	Runtime string `json:"runtime,omitempty"`
	// Secrets name the credentials the skill needs, each the variable its
	// scripts read; the sandbox gets a placeholder there, and the egress
	// proxy adds the value for the hosts the operator set (secrets.go).
	Secrets []string `json:"secrets,omitempty"`

	// Claude fields (claudefields.go).
	// DisableModelInvocation leaves the skill out of what a model is shown
	// (ModelVisible); a host that names it still runs it.
	DisableModelInvocation bool `json:"disable_model_invocation,omitempty"`
	// WhenToUse is shown to a model next to the description.
	WhenToUse string `json:"when_to_use,omitempty"`
}

// Spec limits on field lengths, counted in runes.
const (
	maxNameLen          = 64
	maxDescriptionLen   = 1024
	maxCompatibilityLen = 500
)

// specFields are the only top-level fields the Agent Skills spec allows.
var specFields = map[string]bool{
	"name": true, "description": true, "license": true,
	"compatibility": true, "metadata": true, "allowed-tools": true,
}

// severity says what a problem means for Load and for Validate.
type severity int

const (
	sevFatal  severity = iota // Load refuses the skill; an error in Validate
	sevError                  // an error in Validate and Strict; Load still loads the skill
	sevStrict                 // a warning, an error in strict mode
	sevWarn                   // always a warning
)

type problem struct {
	sev  severity
	line int // 1-based line in SKILL.md, 0 when not tied to one
	msg  where.Text
	// loud marks a problem the user should hear about whenever the skill
	// is loaded to run, not only from validate: sandboxrun made a choice
	// for the skill (its name, an entry it cannot read).
	loud bool
}

func (p problem) String() string { return p.render(where.Operator) }

// render is the problem with any host path in it named through n.
func (p problem) render(n where.Namer) string {
	if p.line > 0 {
		return fmt.Sprintf("line %d: %s", p.line, p.msg.Render(n))
	}
	return p.msg.Render(n)
}

// decoder turns the frontmatter mapping into a Manifest, collecting every
// problem instead of stopping at the first, so Validate can report them all.
type decoder struct {
	lineOffset int // added to yaml.Node lines to get SKILL.md lines
	probs      []problem
}

func (d *decoder) add(sev severity, n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil && n.Line > 0 {
		line = n.Line + d.lineOffset
	}
	d.probs = append(d.probs, problem{sev: sev, line: line, msg: where.Sprintf(format, args...)})
}

// addLoud adds a problem that loading the skill reports too (see
// problem.loud).
func (d *decoder) addLoud(sev severity, n *yaml.Node, format string, args ...any) {
	d.add(sev, n, format, args...)
	d.probs[len(d.probs)-1].loud = true
}

// decodeManifest reads the top-level mapping of a frontmatter.
func decodeManifest(root *yaml.Node) (Manifest, []problem) {
	d := &decoder{lineOffset: 1}
	var m Manifest
	top := d.entries(root, "")

	for _, e := range top {
		if !specFields[e.key] && !isExecField(e.key) {
			d.add(sevStrict, e.keyNode, "top-level field `%s` is not in the Agent Skills spec; move it under `metadata:` as %s, or remove it",
				e.key, metadataSuggestion(e.key, e.value))
		}
	}
	byKey := make(map[string]*yaml.Node, len(top))
	for _, e := range top {
		byKey[e.key] = e.value
	}

	m.Name = d.name(byKey["name"])
	m.Description = d.description(byKey["description"], root)
	m.License = d.optionalString(byKey["license"], "license")
	m.Compatibility = d.optionalString(byKey["compatibility"], "compatibility")
	if n := byKey["compatibility"]; n != nil {
		if l := utf8.RuneCountInString(m.Compatibility); l > maxCompatibilityLen {
			d.add(sevError, n, "`compatibility` is %d characters; the spec allows at most %d, shorten it", l, maxCompatibilityLen)
		}
	}
	meta := d.metadata(byKey["metadata"], &m)
	d.allowedTools(byKey["allowed-tools"], &m)
	d.execFields(top, meta, &m)
	return m, d.probs
}

// entry is one key of a mapping, in file order.
type entry struct {
	key     string
	keyNode *yaml.Node
	value   *yaml.Node
}

// entries lists a mapping's keys, reporting duplicate and non-string keys:
// with duplicates a reader cannot tell which value a tool will use, which
// for a sandbox limit is a security question, so they are fatal.
func (d *decoder) entries(m *yaml.Node, prefix string) []entry {
	var out []entry
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolveAlias(m.Content[i]), resolveAlias(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.add(sevFatal, k, "%sa key is a YAML %s; keys must be plain names", prefix, kindName(k))
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.add(sevFatal, k, "`%s%s` is given twice (also on line %d); keep one", prefix, k.Value, prev.Line+d.lineOffset)
			continue
		}
		seen[k.Value] = k
		if prefix != "" && k.Tag != "!!str" {
			d.add(sevError, k, "key `%s%s` must be a string; quote it: `\"%s\":`", prefix, k.Value, k.Value)
		}
		out = append(out, entry{key: k.Value, keyNode: k, value: v})
	}
	return out
}

// scalarText returns a scalar's text. Like the spec's reference validator,
// any scalar counts as text at the top level (`version: 1.10` stays "1.10");
// a null is absent.
func scalarText(n *yaml.Node) (string, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", false
	}
	return n.Value, true
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func (d *decoder) description(n, root *yaml.Node) string {
	if isNull(n) {
		d.add(sevFatal, nil, "`description` is missing; add `description:` saying what the skill does and when to use it")
		return ""
	}
	s, ok := scalarText(n)
	if !ok {
		d.add(sevFatal, n, "`description` is a YAML %s; it must be a string saying what the skill does and when to use it", kindName(n))
		return ""
	}
	if strings.TrimSpace(s) == "" {
		d.add(sevFatal, n, "`description` is blank; say what the skill does and when to use it")
		return ""
	}
	if l := utf8.RuneCountInString(s); l > maxDescriptionLen {
		d.add(sevError, n, "`description` is %d characters; the spec allows at most %d, move detail into the body", l, maxDescriptionLen)
	}
	return strings.TrimSpace(s)
}

func (d *decoder) optionalString(n *yaml.Node, field string) string {
	if isNull(n) {
		return ""
	}
	s, ok := scalarText(n)
	if !ok {
		d.add(sevFatal, n, "`%s` is a YAML %s; it must be a string", field, kindName(n))
	}
	return s
}

// metadata reads the metadata mapping into m.Metadata and returns its
// entries for the execution fields. The spec allows only string values, so a
// number, boolean or null is an error (its text is still kept) and a list or
// mapping is an error (and left out of m.Metadata).
func (d *decoder) metadata(n *yaml.Node, m *Manifest) []entry {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.add(sevFatal, n, "`metadata` is a YAML %s; it must be a mapping of names to strings, e.g. `metadata:` then `  version: \"1.0\"`", kindName(n))
		return nil
	}
	entries := d.entries(n, "metadata.")
	m.Metadata = make(map[string]string, len(entries))
	for _, e := range entries {
		v := e.value
		switch {
		case v.Kind != yaml.ScalarNode:
			d.add(sevError, v, "`metadata.%s` is a YAML %s; the spec allows only string values, write it as %s",
				e.key, kindName(v), metadataSuggestion(e.key, v))
			continue
		case v.Tag != "!!str":
			// `version: 1.0` is the common case: YAML reads a number,
			// sandboxrun keeps the text as written, so it only breaks the
			// spec's letter.
			d.add(sevStrict, v, "`metadata.%s` is not a string (YAML reads %s as %s); the spec allows only string values, quote it: %s",
				e.key, v.Value, scalarKind(v), metadataSuggestion(e.key, v))
		}
		if v.Tag == "!!null" {
			m.Metadata[e.key] = ""
		} else {
			m.Metadata[e.key] = v.Value
		}
	}
	return entries
}

// scalarKind names what YAML read a plain scalar as.
func scalarKind(n *yaml.Node) string {
	switch n.Tag {
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a date"
	}
	return "a " + strings.TrimPrefix(n.Tag, "!!")
}

// metadataSuggestion spells a value the way the spec wants it under metadata:
// one quoted string, lists joined with spaces.
func metadataSuggestion(key string, v *yaml.Node) string {
	var text string
	switch {
	case v == nil || isNull(v):
		text = ""
	case v.Kind == yaml.ScalarNode:
		text = v.Value
	case v.Kind == yaml.SequenceNode:
		text = strings.Join(listTexts(v), " ")
	default:
		text = "..."
	}
	return fmt.Sprintf("`%s: %q`", key, text)
}

// allowedTools accepts a string or, as the reference validator does, a list
// of strings.
func (d *decoder) allowedTools(n *yaml.Node, m *Manifest) {
	if isNull(n) {
		return
	}
	var tools bashcheck.Tools
	var unclear []*bashcheck.AllowedToolsError
	var err error
	switch n.Kind {
	case yaml.ScalarNode:
		m.AllowedToolsRaw = n.Value
		tools, unclear, err = bashcheck.ParseAllowedToolsLenient(n.Value)
	case yaml.SequenceNode:
		items := make([]string, 0, len(n.Content))
		for _, it := range n.Content {
			s, ok := scalarText(resolveAlias(it))
			if !ok {
				d.add(sevFatal, it, "`allowed-tools` list items must be strings such as `Read` or `Bash(git status:*)`")
				return
			}
			items = append(items, s)
		}
		m.AllowedToolsRaw = strings.Join(items, " ")
		tools, unclear, err = bashcheck.ParseAllowedToolsListLenient(items)
	default:
		d.add(sevFatal, n, "`allowed-tools` is a YAML %s; write a string such as `Bash(python3:*) Read` or a list of such entries", kindName(n))
		return
	}
	if err != nil {
		d.add(sevFatal, n, "`allowed-tools` does not parse: %v", err)
		return
	}
	for _, u := range unclear {
		// The entry is kept and allows nothing: a grant sandboxrun cannot
		// read costs the skill that grant, not the whole skill.
		d.addLoud(sevStrict, n, "`allowed-tools` entry %s is not understood by sandboxrun, so it allows nothing here: %s", u.Entry, u.Reason)
	}
	m.AllowedTools = tools
	for _, t := range tools {
		if bashcheck.KnownTool(t.Name) {
			continue
		}
		if known, ok := bashcheck.CanonicalTool(t.Name); ok {
			d.add(sevWarn, n, "`allowed-tools` names unknown tool `%s`; tool names are case-sensitive, did you mean `%s`?", t.Name, known)
		} else {
			d.add(sevWarn, n, "`allowed-tools` names unknown tool `%s`; it is kept for newer agent hosts but grants nothing in sandboxrun", t.Name)
		}
	}
}

// listTexts returns the scalar items of a list, skipping anything else.
func listTexts(n *yaml.Node) []string {
	items := make([]string, 0, len(n.Content))
	for _, it := range n.Content {
		if s, ok := scalarText(resolveAlias(it)); ok {
			items = append(items, s)
		}
	}
	return items
}
