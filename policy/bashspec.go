package policy

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

const (
	bashTool = "Bash"
	// prefixSuffix marks a Bash spec that allows any arguments after its words.
	prefixSuffix = ":*"
)

// bashSpec is a parsed Bash(...) entry.
type bashSpec struct {
	// words are the spec's command words, the program normalised.
	words []string
	// prefix is true for "cmd:*": the command's leading words must equal
	// words and anything may follow; false means the whole command must.
	prefix bool
}

// newShellParser returns the one parser configuration policy uses, so specs
// and commands are read by the same rules.
func newShellParser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}

// parseBashSpec parses the text inside Bash(...). The spec is read with the
// same shell parser as commands, so quoting means the same in both places.
func parseBashSpec(spec string) (bashSpec, error) {
	body, prefix := strings.CutSuffix(strings.TrimSpace(spec), prefixSuffix)
	body = strings.TrimSpace(body)
	if body == "" || body == "*" {
		return bashSpec{}, errors.New(`a Bash scope must name a command, e.g. Bash(git status:*); write Bash alone to allow every command`)
	}
	f, err := newShellParser().Parse(strings.NewReader(body), "")
	if err != nil {
		return bashSpec{}, fmt.Errorf("the Bash scope %q is not a shell command line (%w); write plain words, e.g. Bash(git status:*)", body, err)
	}
	if len(f.Stmts) != 1 {
		return bashSpec{}, fmt.Errorf("the Bash scope %q holds more than one command; write one entry per command, e.g. Bash(git status:*), Bash(jq:*)", body)
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 || len(st.Redirs) > 0 ||
		st.Negated || st.Background || st.Coprocess || st.Disown {
		return bashSpec{}, fmt.Errorf("the Bash scope %q must be plain command words, without operators, redirections or assignments; e.g. Bash(git status:*)", body)
	}
	words := make([]string, len(call.Args))
	for i, w := range call.Args {
		v, static := staticWord(w)
		if !static {
			return bashSpec{}, fmt.Errorf("the Bash scope %q has a word that is not literal text (globs, $ and ~ are not patterns here); only a trailing :* is a wildcard, e.g. Bash(ls:*)", body)
		}
		words[i] = v
	}
	words[0] = normProgram(words[0])
	return bashSpec{words: words, prefix: prefix}, nil
}

// cmdWord is one word of a command: its value when static.
type cmdWord struct {
	value  string
	static bool
}

// matches reports whether the spec allows a simple command with these words
// (the program already normalised). Only static words can equal a spec word;
// in a prefix spec the words after the prefix may be anything, because ":*"
// means "any arguments".
func (s bashSpec) matches(words []cmdWord) bool {
	if len(words) < len(s.words) || (!s.prefix && len(words) != len(s.words)) {
		return false
	}
	for i, sw := range s.words {
		if !words[i].static || words[i].value != sw {
			return false
		}
	}
	return true
}
