package bashcheck

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxCommandBytes bounds a Bash-tool command. Anything longer belongs in a
// script or the JSON arguments, and the bound keeps the parser's work small.
const MaxCommandBytes = 64 << 10

// MaxCommandDepth bounds how deeply a command may nest brackets and compound
// commands. The parser recurses once per level, so the bound is checked by a
// linear scan before parsing starts.
const MaxCommandDepth = 64

// lexicalReason returns why command must be refused before it is parsed, or
// "" when it may be parsed.
//
// The checker and bash must read the same program from the same bytes. They
// are different parsers, so every input class on which two bash parsers are
// known to split differently is refused here rather than reconciled:
//
//   - backslash-newline: bash deletes the pair before it tokenizes (inside
//     double quotes, in $ expansions, in here-document bodies and delimiters,
//     after a comment), so "$\<newline>(id)" is a command substitution to bash
//     while another parser may keep a literal. Refused anywhere, even inside
//     single quotes where it is inert, so the rule has no context to get wrong.
//   - carriage return: bash treats CR as an ordinary word character, while
//     parsers written for CRLF files may take it as a line end, which moves
//     here-document delimiters and comment ends.
//   - NUL and the other C0 control characters but tab and newline, and DEL:
//     bash stops at NUL and uses \x01 and \x7f as internal quoting markers.
//   - invalid UTF-8, whose decoding depends on the locale.
//
// Size and nesting are bounded here too, so the parser never sees an input
// whose tree would be large.
func lexicalReason(command string) string {
	switch {
	case len(command) > MaxCommandBytes:
		return fmt.Sprintf("the command is %d bytes, over the %d-byte limit; put long input in a file or in the JSON arguments", len(command), MaxCommandBytes)
	case strings.TrimSpace(command) == "":
		return "the command is empty; pass a command line such as \"git status\""
	case !utf8.ValidString(command):
		return "the command is not valid UTF-8; pass text"
	case strings.Contains(command, "\\\n"):
		return "a backslash at the end of a line (line continuation) is not allowed: bash joins the lines before reading words, so the command could run differently from how it reads; write each command on one line (long commands can be split into several commands, or moved into a script)"
	}
	for i := 0; i < len(command); i++ {
		switch c := command[i]; {
		case c == '\r':
			return "the command contains a carriage return (CRLF line ends?); use plain newlines (\\n) between lines"
		case c == 0:
			return "the command contains a NUL byte; remove it"
		case (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f:
			return fmt.Sprintf("the command contains the control character 0x%02x; remove it (write it as $'\\x%02x' inside the command if a program needs it)", c, c)
		}
	}
	if d := nestingDepth(command); d > MaxCommandDepth {
		return fmt.Sprintf("the command nests brackets or compound commands %d deep, over the limit of %d; flatten it or move it into a script", d, MaxCommandDepth)
	}
	return ""
}

// nestingDepth over-estimates how deeply command nests: every ( { [ opens a
// level and every ) } ] closes one, quoted or not, and so do the words that
// open and close compound commands. It never under-estimates what the parser
// will recurse into, which is all the bound needs.
func nestingDepth(command string) int {
	depth, deepest := 0, 0
	word := 0 // start of the current run of letters
	closeWord := func(end int) {
		switch command[word:end] {
		case "if", "case", "for", "while", "until", "select", "function", "coproc":
			depth++
		case "fi", "esac", "done":
			depth--
		}
	}
	for i := 0; i < len(command); i++ {
		c := command[i]
		if c >= 'a' && c <= 'z' {
			continue
		}
		closeWord(i)
		word = i + 1
		switch c {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
		}
		if depth < 0 {
			depth = 0
		}
		if depth > deepest {
			deepest = depth
		}
	}
	closeWord(len(command))
	if depth > deepest {
		deepest = depth
	}
	return deepest
}
