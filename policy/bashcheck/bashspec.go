package bashcheck

import (
	"errors"
	"fmt"
	"path"
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
	words []specWord
	// prefix is true for "cmd:*", "cmd *" and a spec ending in a path
	// pattern: the command's leading words must match words and anything
	// may follow; false means the whole command must.
	prefix bool
}

// specWord is one word of a Bash spec: literal text, or a path pattern
// (scripts/*.py) that Claude Code's allowed-tools write with * inside a path.
type specWord struct {
	value string
	// glob marks value as a path.Match pattern: * and ? never match "/",
	// and the command's word may hold no ".." element (see matchWord).
	glob bool
}

// newShellParser returns the one parser configuration policy uses, so specs
// and commands are read by the same rules.
func newShellParser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}

// parseBashSpec parses the text inside Bash(...). The spec is read with the
// same shell parser as commands, so quoting means the same in both places.
//
// Three spellings allow any arguments after the words: the legacy "cmd:*",
// Claude Code's "cmd *", and a spec whose last word is a path pattern
// ("python3 scripts/*", which Claude Code also reads as "and anything after").
// A wildcard is otherwise understood only inside a path, after a "/"
// (scripts/*.py); "git * main" and "ls*" are refused, since a wildcard that
// spans words or program names could allow far more than it reads.
func parseBashSpec(spec string) (bashSpec, error) {
	body, prefix := strings.CutSuffix(strings.TrimSpace(spec), prefixSuffix)
	body = strings.TrimSpace(body)
	if cut, ok := strings.CutSuffix(body, " *"); ok && !prefix {
		body, prefix = strings.TrimSpace(cut), true
	}
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
	words := make([]specWord, len(call.Args))
	for i, w := range call.Args {
		if v, static := staticWord(w); static {
			words[i] = specWord{value: v}
			continue
		}
		pat, ok := pathPattern(w)
		if !ok {
			return bashSpec{}, fmt.Errorf("the Bash scope %q has a word that is not literal text ($, ~, braces, or a wildcard outside a path); a wildcard may end the scope (git diff *, git diff:*) or stand inside a path (python3 scripts/*.py)", body)
		}
		words[i] = specWord{value: pat, glob: true}
	}
	if words[0].glob {
		words[0].value = path.Clean(words[0].value)
	} else {
		words[0].value = NormProgram(words[0].value)
	}
	if last := words[len(words)-1]; last.glob && strings.HasSuffix(last.value, "*") {
		prefix = true
	}
	return bashSpec{words: words, prefix: prefix}, nil
}

// pathPattern returns the pattern of a spec word written as an unquoted path
// with * or ? after its first "/": "scripts/*.py", "/skills/x/scripts/*".
// Brackets, braces, ~, $ and backslashes make it no pattern.
func pathPattern(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok || strings.ContainsAny(lit.Value, "[]{}~$\\") {
		return "", false
	}
	v := lit.Value
	wild := strings.IndexAny(v, "*?")
	if wild < 0 || !strings.Contains(v[:wild], "/") {
		return "", false
	}
	if _, err := path.Match(v, ""); err != nil {
		return "", false
	}
	return v, true
}

// cmdWord is one word of a command: its value when static.
type cmdWord struct {
	value  string
	static bool
}

// matches reports whether the spec allows a simple command with these words
// (the program already normalised). Only static words can match a spec word;
// in a prefix spec the words after the prefix may be anything, because ":*"
// means "any arguments".
func (s bashSpec) matches(words []cmdWord) bool {
	if len(words) < len(s.words) || (!s.prefix && len(words) != len(s.words)) {
		return false
	}
	for i, sw := range s.words {
		if !sw.matchWord(words[i]) {
			return false
		}
	}
	return true
}

// matchWord compares one command word with a spec word. A path pattern
// matches a static word without a ".." element, so scripts/* never allows
// scripts/../../tmp/x.py.
func (sw specWord) matchWord(w cmdWord) bool {
	if !w.static {
		return false
	}
	if !sw.glob {
		return w.value == sw.value
	}
	for _, elem := range strings.Split(w.value, "/") {
		if elem == ".." {
			return false
		}
	}
	ok, err := path.Match(sw.value, w.value)
	return err == nil && ok
}
