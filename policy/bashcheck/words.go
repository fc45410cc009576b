package bashcheck

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// unquotedSpecial are the characters that make bash expand an unquoted literal
// (globs, brace expansion, tilde expansion). A word holding one of them is not
// static: what runs could differ from what was written, so it cannot be
// compared with an allowed-tools spec. Being stricter than bash here (a lone
// "{" or a "~" mid-word is literal to bash) only costs a denial, never a bypass.
const unquotedSpecial = "*?[{~"

// staticWord returns the single string bash produces for w when w is made
// only of literal text (unquoted, single- or double-quoted), and false when
// any part of it is expanded at run time.
func staticWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, unquotedSpecial) {
				return "", false
			}
			b.WriteString(unescapeUnquoted(p.Value))
		case *syntax.SglQuoted:
			// $'...' decodes escapes; treating it as dynamic keeps the
			// comparison exact without re-implementing ANSI-C decoding.
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			// $"..." is translated through the locale, so it is dynamic.
			if p.Dollar {
				return "", false
			}
			for _, inner := range p.Parts {
				lit, ok := inner.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescapeDoubleQuoted(lit.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescapeUnquoted applies bash's quote removal to an unquoted literal: a
// backslash makes the next character literal and disappears. The parser has
// already dropped backslash-newline pairs.
func unescapeUnquoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDoubleQuoted applies quote removal inside double quotes, where a
// backslash only escapes $ ` " \ and newline and is kept before anything else.
func unescapeDoubleQuoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// NormProgram maps program names that run the same interpreter in the sandbox
// to one name, so Bash(python:*) and "python3 x.py" match (the image has only
// python3).
func NormProgram(p string) string {
	if p == "python" {
		return "python3"
	}
	return p
}

// plainWord reports whether s can be written in an allowed-tools spec without
// quoting.
func plainWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_./+@%=,-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ShellName reports whether s is a shell variable name: ASCII letters,
// digits and '_', not starting with a digit. Environment names are held to
// the same rule.
func ShellName(s string) bool {
	return s != "" && (s[0] < '0' || s[0] > '9') && wordChars(s)
}

// wordChars reports whether s is only ASCII letters, digits and '_'.
func wordChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}
