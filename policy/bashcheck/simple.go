package bashcheck

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

const denyExpandedProgram = "the program name is an expansion ($VAR, glob, ~ or {a,b}), so what runs cannot be checked; write the program name literally"

// hiddenCodeBuiltins run code the policy cannot see, or change which code a
// later, allowed command runs, so no entry allows them: trap runs a string on
// a signal or at exit, hash -p rebinds a program name to any file, enable -f
// loads a shared object, mapfile/readarray -C run a callback.
var hiddenCodeBuiltins = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true,
	"trap": true, "hash": true, "enable": true, "mapfile": true, "readarray": true,
}

// call checks one simple command: its assignments (see assign.go), every
// word, then the program and arguments against the Bash entries. whole is the statement the
// command stands in, which a denial of the command as a whole quotes.
func (c *checker) call(x *syntax.CallExpr, whole syntax.Node) *DeniedError {
	for _, a := range x.Assigns {
		if d := c.assign(a); d != nil {
			return d
		}
	}
	if len(x.Args) == 0 {
		// Only assignments (FOO=1), which assign has already judged.
		return nil
	}
	for _, w := range x.Args {
		if d := c.word(w); d != nil {
			return d
		}
	}
	words := c.words(x.Args)
	if !words[0].static {
		return c.deny(x.Args[0], denyExpandedProgram, "")
	}
	if d := c.hiddenCode(x, whole, words); d != nil {
		return d
	}
	c.programs = append(c.programs, words[0].value)
	if c.anyBash {
		return nil
	}
	norm := make([]cmdWord, len(words))
	copy(norm, words)
	norm[0].value = NormProgram(norm[0].value)
	for _, s := range c.specs {
		if s.matches(norm) {
			return nil
		}
	}
	reason := fmt.Sprintf("not allowed: no entry of the skill's allowed-tools matches it (Bash entries: %s)", strings.Join(c.entries, ", "))
	if len(c.specs) > 0 && !allStatic(words) {
		reason += "; arguments built from expansions match only the part after a :* prefix"
	}
	return c.deny(whole, reason, c.suggest(words))
}

// hiddenCode refuses hiddenCodeBuiltins also when reached through the
// command or builtin builtins, which run a builtin by name; for those the
// word after the options is the real program and must be literal too.
func (c *checker) hiddenCode(x *syntax.CallExpr, whole syntax.Node, words []cmdWord) *DeniedError {
	const reason = "eval, exec, source, ., trap, hash, enable and mapfile run code the policy cannot see (or change which program a name runs) and are never allowed; run the program directly"
	prog := words[0].value
	if hiddenCodeBuiltins[prog] {
		return c.deny(whole, reason, "")
	}
	if prog != "command" && prog != "builtin" {
		return nil
	}
	for i, w := range words[1:] {
		switch {
		case !w.static:
			return c.deny(x.Args[i+1], denyExpandedProgram, "")
		case strings.HasPrefix(w.value, "-"):
			continue
		case hiddenCodeBuiltins[w.value]:
			return c.deny(whole, reason, "")
		}
		return nil
	}
	return nil
}

func allStatic(words []cmdWord) bool {
	for _, w := range words {
		if !w.static {
			return false
		}
	}
	return true
}

// redirect allows redirections to literal paths (the sandbox mounts decide
// what is writable) and here-documents whose bodies pass the word checks.
func (c *checker) redirect(r *syntax.Redirect) *DeniedError {
	if r.N != nil && strings.Trim(r.N.Value, "0123456789") != "" {
		return c.deny(r, "named file descriptors ({var}>) are not allowed; use a number, e.g. 3>", "")
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if !plainDelimiter(r.Word) {
			return c.deny(r, "a here-document delimiter must be a plain word, optionally quoted as a whole: <<EOF, <<'EOF' or <<\"EOF\"; bash and the checker could end a delimiter built from expansions or mixed quoting on different lines", "")
		}
		if r.Hdoc != nil {
			return c.word(r.Hdoc)
		}
		return nil
	case syntax.WordHdoc:
		return c.word(r.Word)
	case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.DplIn,
		syntax.DplOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
		if d := c.word(r.Word); d != nil {
			return d
		}
		target, static := staticWord(r.Word)
		if !static {
			return c.deny(r, "redirection targets must be literal paths: an expanded target could name /dev/tcp/…, which bash turns into a network connection", "")
		}
		if isNetRedirect(target) {
			return c.deny(r, "redirections to /dev/tcp and /dev/udp open network connections and are not allowed", "")
		}
		return nil
	default:
		return c.deny(r, fmt.Sprintf("the redirection %s is not understood by the policy and is denied", r.Op), "")
	}
}

// plainDelimiter reports whether a here-document delimiter is letters,
// digits and '_' (at most 64 of them), unquoted or quoted whole.
func plainDelimiter(w *syntax.Word) bool {
	if w == nil || len(w.Parts) != 1 {
		return false
	}
	var text string
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		text = p.Value
	case *syntax.SglQuoted:
		if p.Dollar {
			return false
		}
		text = p.Value
	case *syntax.DblQuoted:
		if p.Dollar || len(p.Parts) != 1 {
			return false
		}
		lit, ok := p.Parts[0].(*syntax.Lit)
		if !ok {
			return false
		}
		text = lit.Value
	default:
		return false
	}
	return text != "" && len(text) <= 64 && wordChars(text)
}

func isNetRedirect(target string) bool {
	clean := path.Clean(target) + "/"
	return strings.HasPrefix(clean, "/dev/tcp/") || strings.HasPrefix(clean, "/dev/udp/")
}

// word refuses the parts of a word that run code or evaluate arithmetic;
// plain parameter expansions and globs are data and pass.
func (c *checker) word(w *syntax.Word) *DeniedError {
	if w == nil {
		return nil
	}
	return c.parts(w.Parts)
}

func (c *checker) parts(parts []syntax.WordPart) *DeniedError {
	for _, part := range parts {
		var d *DeniedError
		switch p := part.(type) {
		case *syntax.SglQuoted:
		case *syntax.Lit:
			// The parser leaves some text literal that bash still reads as
			// process substitution, e.g. the word of ${x:-<(cmd)}.
			if strings.Contains(p.Value, "<(") || strings.Contains(p.Value, ">(") {
				d = c.deny(p, "process substitution (<(...) or >(...)) is not allowed: it runs a command the policy cannot match; use a file or a pipe", "")
			}
		case *syntax.ExtGlob:
			d = c.extGlob(p)
		case *syntax.DblQuoted:
			d = c.parts(p.Parts)
		case *syntax.ParamExp:
			d = c.paramExp(p)
		case *syntax.CmdSubst:
			d = c.deny(p, "command substitution ($(...) or `...`) is not allowed: it runs a command the policy cannot match; run the commands separately", "")
		case *syntax.ProcSubst:
			d = c.deny(p, "process substitution (<(...) or >(...)) is not allowed: it runs a command the policy cannot match; use a file or a pipe", "")
		case *syntax.ArithmExp:
			d = c.deny(p, denyArithmetic, "")
		case *syntax.BraceExp:
			for _, e := range p.Elems {
				if d = c.word(e); d != nil {
					break
				}
			}
		default:
			d = c.deny(part, fmt.Sprintf("this word part (%T) is not understood by the policy and is denied", part), "")
		}
		if d != nil {
			return d
		}
	}
	return nil
}

// extGlobPattern are the characters an extended glob (@(…), !(…), …) may
// hold. The parser keeps the pattern as raw text, while bash performs
// process substitution and expansions inside it, so anything beyond plain
// pattern characters is refused.
const extGlobPattern = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/@!*?+|-[]^%="

func (c *checker) extGlob(p *syntax.ExtGlob) *DeniedError {
	if strings.Trim(p.Pattern.Value, extGlobPattern) != "" {
		return c.deny(p, "extended glob patterns (@(…), !(…), *(…), +(…), ?(…)) may hold only letters, digits and the pattern characters _ . , : / @ ! * ? + | - [ ] ^ % =; quote the text if it is not a pattern", "")
	}
	return nil
}

// paramExp allows $x, ${x}, ${#x}, defaults (${x:-w}), pattern removal,
// replacement and case changes. It refuses what evaluates arithmetic (index,
// slice), follows a name held in a variable (${!x}), assigns (${x:=w}) or
// transforms (${x@P} expands prompts), and the non-bash forms.
func (c *checker) paramExp(p *syntax.ParamExp) *DeniedError {
	switch {
	case p.Excl:
		return c.deny(p, "indirect expansion ${!...} is not allowed: it follows a name held in a variable, which bash may evaluate as code; use the variable directly", "")
	case p.Index != nil, p.Slice != nil:
		return c.deny(p, denyArithmetic, "")
	case p.Param == nil, p.NestedParam != nil, p.Flags != nil, p.Width, p.IsSet,
		len(p.Modifiers) > 0, p.Split != syntax.OptUnset, p.GlobSubst != syntax.OptUnset,
		p.RcExpand != syntax.OptUnset, p.Names != 0:
		return c.deny(p, "this parameter expansion is not bash and is denied", "")
	}
	if p.Repl != nil {
		if d := c.word(p.Repl.Orig); d != nil {
			return d
		}
		if d := c.word(p.Repl.With); d != nil {
			return d
		}
	}
	if p.Exp != nil {
		switch p.Exp.Op {
		case syntax.AlternateUnset, syntax.AlternateUnsetOrNull, syntax.DefaultUnset,
			syntax.DefaultUnsetOrNull, syntax.ErrorUnset, syntax.ErrorUnsetOrNull,
			syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix,
			syntax.RemLargePrefix, syntax.UpperFirst, syntax.UpperAll,
			syntax.LowerFirst, syntax.LowerAll:
			return c.word(p.Exp.Word)
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			return c.deny(p, "${x=value} and ${x:=value} assign variables and are not allowed; use ${x:-value}", "")
		default:
			return c.deny(p, fmt.Sprintf("the expansion operator %s is not allowed (${x@P} and friends can run code); use plain $x", p.Exp.Op), "")
		}
	}
	return nil
}
