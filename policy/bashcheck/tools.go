package bashcheck

import (
	"errors"
	"fmt"
	"strings"
)

// ErrAllowedTools is wrapped by every error ParseAllowedTools returns.
var ErrAllowedTools = errors.New("invalid allowed-tools")

// AllowedToolsError reports one malformed allowed-tools entry.
type AllowedToolsError struct {
	// Entry is the offending entry as written (possibly cut short when the
	// parentheses never close).
	Entry string
	// Offset is the byte offset of Entry in the parsed string.
	Offset int
	// Reason says what is wrong and how to fix it.
	Reason string
}

func (e *AllowedToolsError) Error() string {
	return fmt.Sprintf("allowed-tools entry %q at column %d: %s", e.Entry, e.Offset+1, e.Reason)
}

// Unwrap lets callers classify the error with errors.Is(err, ErrAllowedTools).
func (e *AllowedToolsError) Unwrap() error { return ErrAllowedTools }

// Tool is one allowed-tools entry: "Read" or "Bash(git status:*)".
type Tool struct {
	Name string
	// Spec is the text between the parentheses, trimmed; empty when HasSpec
	// is false.
	Spec    string
	HasSpec bool
}

// String renders the entry in the form ParseAllowedTools reads back.
func (t Tool) String() string {
	if !t.HasSpec {
		return t.Name
	}
	return t.Name + "(" + t.Spec + ")"
}

// Tools is a parsed allowed-tools list, in the order the skill wrote it.
type Tools []Tool

// String renders the list comma-separated; ParseAllowedTools(ts.String())
// gives back ts.
func (ts Tools) String() string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, ", ")
}

// Grants reports whether ts holds an unscoped entry for the tool, e.g.
// Grants("Write") decides whether /workspace is mounted read-write.
//
// A scoped entry such as Write(docs/**) does not count: sandboxrun can only
// grant a whole mount, and widening "write docs/" to "write everything" would
// silently give a skill more than it asked for.
func (ts Tools) Grants(name string) bool {
	for _, t := range ts {
		if t.Name == name && !t.HasSpec {
			return true
		}
	}
	return false
}

// knownTools are the tool names agent hosts define today. Names outside this
// set are kept (skills may target newer hosts) and validate warns about them.
var knownTools = map[string]bool{
	"Agent": true, "Bash": true, "BashOutput": true, "Edit": true,
	"ExitPlanMode": true, "Glob": true, "Grep": true, "KillShell": true,
	"LS": true, "MultiEdit": true, "NotebookEdit": true, "NotebookRead": true,
	"Read": true, "Skill": true, "SlashCommand": true, "Task": true,
	"TodoWrite": true, "WebFetch": true, "WebSearch": true, "Write": true,
}

// mcpPrefix marks tools provided by MCP servers (mcp__server__tool); their
// names are open-ended, so the prefix alone makes them known.
const mcpPrefix = "mcp__"

// KnownTool reports whether name is a tool agent hosts are known to define.
func KnownTool(name string) bool {
	return knownTools[name] || (strings.HasPrefix(name, mcpPrefix) && len(name) > len(mcpPrefix))
}

// CanonicalTool returns the known tool name that equals name ignoring case,
// so validate can say "did you mean Bash?" for "bash".
func CanonicalTool(name string) (string, bool) {
	for k := range knownTools {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// ParseAllowedTools parses an allowed-tools value. Entries are separated by
// commas and/or whitespace outside parentheses (Bash(git status:*) contains a
// space); each is Tool or Tool(spec). Bash specs are checked further: they must
// be plain command words, optionally ending in ":*" or " *", with wildcards
// only inside paths; {baseDir} and ${CLAUDE_PLUGIN_ROOT} stand for the skill's
// folder (see SkillRefs). Bash(*) is Bash.
func ParseAllowedTools(s string) (Tools, error) {
	ts, unclear, err := ParseAllowedToolsLenient(s)
	if err != nil {
		return nil, err
	}
	if len(unclear) > 0 {
		return nil, unclear[0]
	}
	return ts, nil
}

// ParseAllowedToolsLenient is ParseAllowedTools for a skill's own
// allowed-tools, where an entry sandboxrun cannot read should cost the skill
// that entry, not the whole skill: a Bash scope that does not parse is kept
// in the list (it allows nothing, see CheckCommand) and reported in unclear.
// err is set only when the value itself cannot be split into entries.
func ParseAllowedToolsLenient(s string) (ts Tools, unclear []*AllowedToolsError, err error) {
	i := 0
	for i < len(s) {
		if isToolSep(s[i]) {
			i++
			continue
		}
		t, next, err := parseToolEntry(s, i)
		if err != nil {
			return nil, nil, err
		}
		if t.HasSpec && t.Name == bashTool {
			if _, perr := parseBashSpec(expandSkillDir(t.Spec, placeholderCheckDir, placeholderCheckDir)); perr != nil {
				unclear = append(unclear, &AllowedToolsError{Entry: s[i:next], Offset: i, Reason: perr.Error()})
			}
		}
		ts = append(ts, t)
		i = next
	}
	return ts, unclear, nil
}

// ParseAllowedToolsList parses allowed-tools written as a YAML sequence; each
// item may itself hold several entries.
func ParseAllowedToolsList(items []string) (Tools, error) {
	ts, unclear, err := ParseAllowedToolsListLenient(items)
	if err != nil {
		return nil, err
	}
	if len(unclear) > 0 {
		return nil, unclear[0]
	}
	return ts, nil
}

// ParseAllowedToolsListLenient is ParseAllowedToolsLenient for a YAML
// sequence.
func ParseAllowedToolsListLenient(items []string) (ts Tools, unclear []*AllowedToolsError, err error) {
	for n, item := range items {
		got, bad, err := ParseAllowedToolsLenient(item)
		if err != nil {
			return nil, nil, fmt.Errorf("allowed-tools item %d: %w", n+1, err)
		}
		ts = append(ts, got...)
		unclear = append(unclear, bad...)
	}
	return ts, unclear, nil
}

func isToolSep(c byte) bool {
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return true
	case c >= '0' && c <= '9', c == '_', c == '-':
		return !first
	}
	return false
}

// parseToolEntry reads one entry starting at s[start] (not a separator) and
// returns it with the offset just past it.
func parseToolEntry(s string, start int) (Tool, int, error) {
	bad := func(end int, format string, args ...any) (Tool, int, error) {
		return Tool{}, 0, &AllowedToolsError{Entry: s[start:end], Offset: start, Reason: fmt.Sprintf(format, args...)}
	}
	i := start
	for i < len(s) && isNameByte(s[i], i == start) {
		i++
	}
	name := s[start:i]
	if name == "" {
		end := entryEnd(s, start)
		return bad(end, "a tool name must start with a letter and hold only letters, digits, '_' and '-' (e.g. Read or Bash(git status:*))")
	}
	if i == len(s) || isToolSep(s[i]) {
		return Tool{Name: name}, i, nil
	}
	if s[i] != '(' {
		end := entryEnd(s, start)
		return bad(end, "unexpected %q after the tool name %q; write Tool or Tool(spec) and separate entries with commas or spaces", s[i], name)
	}
	closing, err := matchParen(s, i)
	if err != "" {
		return bad(len(s), "%s", err)
	}
	spec := strings.TrimSpace(s[i+1 : closing])
	end := closing + 1
	if end < len(s) && !isToolSep(s[end]) {
		return bad(entryEnd(s, end), "unexpected text after ')'; separate entries with commas or spaces")
	}
	if spec == "" {
		return bad(end, "empty parentheses; write %s alone to allow the whole tool, or put a scope inside, e.g. %s(...)", name, name)
	}
	if name == bashTool && spec == "*" {
		// Claude Code's spelling of "every command".
		return Tool{Name: name}, end, nil
	}
	return Tool{Name: name, Spec: spec, HasSpec: true}, end, nil
}

// matchParen returns the index of the ')' closing the '(' at s[open].
// Quotes inside the parentheses are honoured so a Bash spec may quote a
// parenthesis; a non-empty string explains a failure.
func matchParen(s string, open int) (int, string) {
	depth := 0
	var quote byte
	for i := open; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i, ""
			}
		}
	}
	if quote != 0 {
		return 0, fmt.Sprintf("unterminated %c quote inside the parentheses; close the quote", quote)
	}
	return 0, "unbalanced parentheses: '(' is never closed; add the missing ')'"
}

// entryEnd returns where the entry containing s[from] ends, for error text.
func entryEnd(s string, from int) int {
	for i := from; i < len(s); i++ {
		if isToolSep(s[i]) {
			return i
		}
	}
	return len(s)
}
