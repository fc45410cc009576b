package bashcheck

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ErrDenied is wrapped by every refusal of CheckCommand.
var ErrDenied = errors.New("command denied by policy")

// DeniedError says which part of a command was refused, why, and which
// allowed-tools entry would allow it.
type DeniedError struct {
	// Command is the whole command as given.
	Command string
	// Part is the offending simple command or construct, as written in
	// Command; empty when the refusal is about the command as a whole.
	Part string
	// Reason says what rule refused Part and how to rewrite the command.
	Reason string
	// Suggest is the allowed-tools entry that would allow Part, e.g.
	// "Bash(git commit:*)"; empty when no entry can (substitutions, eval, ...).
	Suggest string
}

// maxQuoted bounds how much of a command an error message repeats.
const maxQuoted = 120

func (e *DeniedError) Error() string {
	var b strings.Builder
	b.WriteString("command denied")
	if e.Part != "" {
		fmt.Fprintf(&b, " at %q", shorten(e.Part))
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Suggest != "" {
		fmt.Fprintf(&b, "; to allow it, add %s to the skill's allowed-tools", e.Suggest)
	}
	return b.String()
}

// Unwrap lets callers classify the error with errors.Is(err, ErrDenied).
func (e *DeniedError) Unwrap() error { return ErrDenied }

func shorten(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// suggest returns the Bash entry that would allow a simple command with these
// words (words[0] static), or "" when none can be written. When the skill
// already scopes the same program to subcommands (Bash(git status:*)), the
// suggestion keeps that granularity (Bash(git commit:*)) instead of opening
// the whole program.
func (c *checker) suggest(words []cmdWord) string {
	prog := words[0].value
	body := quoteSpecWord(prog)
	if len(words) > 1 && words[1].static && looksLikeSubcommand(words[1].value) && c.scopesProgram(NormProgram(prog)) {
		body += " " + words[1].value
	}
	entry := bashTool + "(" + body + prefixSuffix + ")"
	// Prove the suggestion: it must parse and must allow what was denied.
	ts, err := ParseAllowedTools(entry)
	if err != nil || len(ts) != 1 {
		return ""
	}
	spec, err := parseBashSpec(ts[0].Spec)
	if err != nil {
		return ""
	}
	norm := append([]cmdWord{{value: NormProgram(prog), static: true}}, words[1:]...)
	if !spec.matches(norm) {
		return ""
	}
	return entry
}

// scopesProgram reports whether a Bash entry already names prog with further
// words.
func (c *checker) scopesProgram(prog string) bool {
	for _, s := range c.specs {
		if len(s.words) > 1 && s.words[0].value == prog && !s.words[0].glob {
			return true
		}
	}
	return false
}

// looksLikeSubcommand accepts "commit", "run-tests"; not flags, paths or files.
func looksLikeSubcommand(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// quoteSpecWord writes w so the allowed-tools and shell parsers read it back
// unchanged, or returns it as-is when quoting is impossible (the caller's
// round-trip check then drops the suggestion).
func quoteSpecWord(w string) string {
	if plainWord(w) {
		return w
	}
	q, err := syntax.Quote(w, syntax.LangBash)
	if err != nil {
		return w
	}
	return q
}
