package skill

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file reads the part of TOML that PEP 723 blocks use in practice:
// comments, bare and quoted (dotted) keys, [table] headers, single-line
// basic and literal strings, booleans, numbers, arrays (over several lines,
// with comments and a trailing comma) and inline tables. Anything else
// (multi-line strings, dates, arrays of tables) is refused with the line,
// rather than guessed at: the dependencies of a sandbox image must be read
// exactly or not at all. The module has no TOML library and a few hundred
// lines do not justify one.

type tomlKind int

const (
	tomlString tomlKind = iota + 1
	tomlBool
	tomlNumber
	tomlArray
	tomlTable
)

func (k tomlKind) String() string {
	switch k {
	case tomlString:
		return "string"
	case tomlBool:
		return "boolean"
	case tomlNumber:
		return "number"
	case tomlArray:
		return "list"
	case tomlTable:
		return "table"
	}
	return "value"
}

// tomlValue is one parsed value; line is 0-based in the TOML text.
type tomlValue struct {
	kind  tomlKind
	str   string
	items []tomlValue
	line  int
}

// tomlKV is one key/value pair with its full dotted key (table prefix
// included), in document order.
type tomlKV struct {
	key  string
	val  tomlValue
	line int
}

// tomlError is a syntax error at a 0-based line of the TOML text.
type tomlError struct {
	line int
	msg  string
}

func (e *tomlError) Error() string { return fmt.Sprintf("line %d: %s", e.line+1, e.msg) }

type tomlParser struct {
	src  string
	pos  int
	line int
	// defined records every key and table header seen, to refuse
	// duplicates as TOML does.
	defined map[string]bool
}

// parseTOML parses src (the content of a PEP 723 block).
func parseTOML(src string) ([]tomlKV, error) {
	p := &tomlParser{src: src, defined: map[string]bool{}}
	var out []tomlKV
	table := ""
	for {
		p.skipBlank()
		if p.eof() {
			return out, nil
		}
		switch c := p.src[p.pos]; c {
		case '\n':
			p.pos++
			p.line++
		case '#':
			p.skipComment()
		case '[':
			name, err := p.tableHeader()
			if err != nil {
				return nil, err
			}
			table = name
		default:
			line := p.line
			key, err := p.key()
			if err != nil {
				return nil, err
			}
			p.skipBlank()
			if !p.consume('=') {
				return nil, p.errorf("expected `=` after key `%s`", key)
			}
			p.skipBlank()
			val, err := p.value()
			if err != nil {
				return nil, err
			}
			if err := p.endOfLine(); err != nil {
				return nil, err
			}
			full := joinKey(table, key)
			if p.defined[full] {
				return nil, &tomlError{line: line, msg: fmt.Sprintf("key `%s` is defined twice", full)}
			}
			p.defined[full] = true
			out = append(out, tomlKV{key: full, val: val, line: line})
		}
	}
}

func joinKey(table, key string) string {
	if table == "" {
		return key
	}
	return table + "." + key
}

func (p *tomlParser) eof() bool { return p.pos >= len(p.src) }

func (p *tomlParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.pos]
}

func (p *tomlParser) consume(c byte) bool {
	if p.peek() == c {
		p.pos++
		return true
	}
	return false
}

func (p *tomlParser) errorf(format string, args ...any) error {
	return &tomlError{line: p.line, msg: fmt.Sprintf(format, args...)}
}

// skipBlank skips spaces and tabs (not newlines).
func (p *tomlParser) skipBlank() {
	for !p.eof() && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *tomlParser) skipComment() {
	for !p.eof() && p.src[p.pos] != '\n' {
		p.pos++
	}
}

// skipSpace skips blanks, newlines and comments, as allowed inside arrays.
func (p *tomlParser) skipSpace() {
	for {
		p.skipBlank()
		switch p.peek() {
		case '\n':
			p.pos++
			p.line++
		case '#':
			p.skipComment()
		default:
			return
		}
	}
}

// endOfLine accepts blanks and a comment up to the end of the line.
func (p *tomlParser) endOfLine() error {
	p.skipBlank()
	if p.peek() == '#' {
		p.skipComment()
	}
	if !p.eof() && p.peek() != '\n' {
		return p.errorf("unexpected %s after the value; put one key = value per line", p.describe())
	}
	return nil
}

func (p *tomlParser) describe() string {
	if p.eof() {
		return "end of block"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return strconv.QuoteRune(r)
}

func (p *tomlParser) tableHeader() (string, error) {
	line := p.line
	p.pos++ // '['
	if p.peek() == '[' {
		return "", p.errorf("arrays of tables (`[[...]]`) are not supported in inline script metadata")
	}
	p.skipBlank()
	name, err := p.key()
	if err != nil {
		return "", err
	}
	p.skipBlank()
	if !p.consume(']') {
		return "", p.errorf("table header `[%s` is not closed with `]`", name)
	}
	if err := p.endOfLine(); err != nil {
		return "", err
	}
	if p.defined[name] {
		return "", &tomlError{line: line, msg: fmt.Sprintf("table `[%s]` is defined twice, or also as a key", name)}
	}
	p.defined[name] = true
	return name, nil
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+`)

// key reads a possibly dotted key and returns it with parts joined by ".".
func (p *tomlParser) key() (string, error) {
	var parts []string
	for {
		var part string
		switch p.peek() {
		case '"':
			v, err := p.basicString()
			if err != nil {
				return "", err
			}
			part = v.str
		case '\'':
			v, err := p.literalString()
			if err != nil {
				return "", err
			}
			part = v.str
		default:
			m := bareKey.FindString(p.src[p.pos:])
			if m == "" {
				return "", p.errorf("expected a key, found %s", p.describe())
			}
			p.pos += len(m)
			part = m
		}
		parts = append(parts, part)
		p.skipBlank()
		if !p.consume('.') {
			return strings.Join(parts, "."), nil
		}
		p.skipBlank()
	}
}

var tomlNumberRe = regexp.MustCompile(`^[+-]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|inf|nan|[0-9_]+(?:\.[0-9_]+)?(?:[eE][+-]?[0-9_]+)?)`)

func (p *tomlParser) value() (tomlValue, error) {
	switch c := p.peek(); {
	case c == '"':
		return p.basicString()
	case c == '\'':
		return p.literalString()
	case c == '[':
		return p.array()
	case c == '{':
		return p.inlineTable()
	case strings.HasPrefix(p.src[p.pos:], "true"):
		p.pos += 4
		return tomlValue{kind: tomlBool, str: "true", line: p.line}, nil
	case strings.HasPrefix(p.src[p.pos:], "false"):
		p.pos += 5
		return tomlValue{kind: tomlBool, str: "false", line: p.line}, nil
	default:
		m := tomlNumberRe.FindString(p.src[p.pos:])
		if m == "" {
			return tomlValue{}, p.errorf("expected a value (a \"string\", a [list], true/false or a number), found %s", p.describe())
		}
		if rest := p.src[p.pos+len(m):]; strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, ":") {
			return tomlValue{}, p.errorf("dates and times are not supported in inline script metadata; quote the value")
		}
		p.pos += len(m)
		return tomlValue{kind: tomlNumber, str: m, line: p.line}, nil
	}
}

func (p *tomlParser) array() (tomlValue, error) {
	v := tomlValue{kind: tomlArray, line: p.line}
	p.pos++ // '['
	for {
		p.skipSpace()
		if p.eof() {
			return v, &tomlError{line: v.line, msg: "list is not closed with `]`"}
		}
		if p.consume(']') {
			return v, nil
		}
		item, err := p.value()
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		if p.consume(',') {
			continue
		}
		if p.consume(']') {
			return v, nil
		}
		if p.eof() {
			return v, &tomlError{line: v.line, msg: "list is not closed with `]`"}
		}
		return v, p.errorf("expected `,` or `]` in the list, found %s", p.describe())
	}
}

// inlineTable reads { k = v, ... }, which TOML keeps on one line.
func (p *tomlParser) inlineTable() (tomlValue, error) {
	v := tomlValue{kind: tomlTable, line: p.line}
	p.pos++ // '{'
	seen := map[string]bool{}
	p.skipBlank()
	if p.consume('}') {
		return v, nil
	}
	for {
		p.skipBlank()
		k, err := p.key()
		if err != nil {
			return v, err
		}
		if seen[k] {
			return v, p.errorf("key `%s` is defined twice in the inline table", k)
		}
		seen[k] = true
		p.skipBlank()
		if !p.consume('=') {
			return v, p.errorf("expected `=` after key `%s`", k)
		}
		p.skipBlank()
		item, err := p.value()
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		p.skipBlank()
		if p.consume(',') {
			continue
		}
		if p.consume('}') {
			return v, nil
		}
		return v, p.errorf("expected `,` or `}` in the inline table (which must fit on one line), found %s", p.describe())
	}
}

func (p *tomlParser) literalString() (tomlValue, error) {
	if strings.HasPrefix(p.src[p.pos:], "'''") {
		return tomlValue{}, p.errorf("multi-line strings are not supported in inline script metadata")
	}
	line := p.line
	p.pos++
	end := strings.IndexAny(p.src[p.pos:], "'\n")
	if end < 0 || p.src[p.pos+end] != '\'' {
		return tomlValue{}, p.errorf("string is not closed with `'` on the same line")
	}
	s := p.src[p.pos : p.pos+end]
	p.pos += end + 1
	if err := checkStringChars(s); err != nil {
		return tomlValue{}, &tomlError{line: line, msg: err.Error()}
	}
	return tomlValue{kind: tomlString, str: s, line: line}, nil
}

func (p *tomlParser) basicString() (tomlValue, error) {
	if strings.HasPrefix(p.src[p.pos:], `"""`) {
		return tomlValue{}, p.errorf("multi-line strings are not supported in inline script metadata")
	}
	line := p.line
	p.pos++
	var b strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return tomlValue{}, &tomlError{line: line, msg: "string is not closed with `\"` on the same line"}
		}
		switch c := p.src[p.pos]; c {
		case '"':
			p.pos++
			if err := checkStringChars(b.String()); err != nil {
				return tomlValue{}, &tomlError{line: line, msg: err.Error()}
			}
			return tomlValue{kind: tomlString, str: b.String(), line: line}, nil
		case '\\':
			r, n, err := unescape(p.src[p.pos:])
			if err != nil {
				return tomlValue{}, &tomlError{line: line, msg: err.Error()}
			}
			b.WriteRune(r)
			p.pos += n
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// unescape decodes the escape sequence at the start of s (which begins with
// a backslash) and returns the rune and the bytes consumed.
func unescape(s string) (rune, int, error) {
	if len(s) < 2 {
		return 0, 0, fmt.Errorf("string ends in a lone backslash")
	}
	switch s[1] {
	case 'b':
		return '\b', 2, nil
	case 't':
		return '\t', 2, nil
	case 'n':
		return '\n', 2, nil
	case 'f':
		return '\f', 2, nil
	case 'r':
		return '\r', 2, nil
	case '"':
		return '"', 2, nil
	case '\\':
		return '\\', 2, nil
	case 'u', 'U':
		n := 4
		if s[1] == 'U' {
			n = 8
		}
		if len(s) < 2+n {
			return 0, 0, fmt.Errorf("escape \\%c needs %d hex digits", s[1], n)
		}
		v, err := strconv.ParseUint(s[2:2+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, 0, fmt.Errorf("escape %q is not a valid Unicode code point", s[:2+n])
		}
		r := rune(v) //nolint:gosec // v <= utf8.MaxRune, checked above
		if !utf8.ValidRune(r) {
			return 0, 0, fmt.Errorf("escape %q is not a valid Unicode code point", s[:2+n])
		}
		return r, 2 + n, nil
	}
	return 0, 0, fmt.Errorf("unknown escape \\%c; use \\\\ for a backslash", s[1])
}

// checkStringChars refuses control characters and invalid UTF-8, which
// TOML forbids in strings and no requirement contains.
func checkStringChars(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("string is not valid UTF-8")
	}
	for _, r := range s {
		if r != '\t' && (r < 0x20 || r == 0x7f) {
			return fmt.Errorf("string contains the control character %U", r)
		}
	}
	return nil
}
