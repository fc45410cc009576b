package bashcheck

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// CheckCommand decides whether the skill's allowed-tools allow command, a
// Bash-tool command line as an agent passes it. It returns nil when allowed
// and a *DeniedError (wrapping ErrDenied) otherwise.
//
// The command is parsed with a real bash parser and never run. The rules:
//
//   - A skill without a Bash entry allows no commands.
//   - Every simple command anywhere in the line (pipelines, && || ;,
//     subshells, { } groups, if/while/until/for/case bodies, [[ ]] tests,
//     time, !) must be allowed by an entry: a bare "Bash" allows any program;
//     "Bash(cmd:*)" a command whose leading words equal cmd's words;
//     "Bash(cmd args)" exactly that word list. python and python3 are the
//     same program.
//   - Only literal words (quotes allowed) can match a spec word. Expansions
//     ($VAR, globs, ~, braces) may appear only in arguments after the words a
//     ":*" spec fixes; the program name must always be literal.
//   - Unless a bare "Bash" entry is present, every variable assignment is
//     denied, whatever the name: prefix (X=1 cmd), standalone (X=1, X+=1)
//     and for-loop variables. An allowed program reads its environment
//     (GIT_*, HOME, ...), so an assignment could make it run other code.
//   - Denied whatever the entries say, including a bare "Bash": command and
//     process substitution, eval/exec/source/. (also via command/builtin),
//     function definitions, arithmetic ((( )), $(( )), let, array subscripts
//     and array assignments, [[ -eq ]] and friends, which bash may evaluate
//     as code), indirect ${!x} expansion, ${x@...} transforms, ${x:=...}
//     assignments, declare/export/local, assignments to variables that steer
//     program lookup or loading (PATH, IFS, BASH_ENV, LD_*, ...), background
//     jobs, select and coproc, and any construct this walker does not know.
//     A bare "Bash" is no security boundary (bash -c can run anything); these
//     rules still apply so that one walker serves every entry form and what
//     the policy reports about a command stays true.
//   - Redirections are allowed when the target is a literal path: the
//     sandbox's read-only mounts decide what can be written. Targets built
//     from expansions and /dev/tcp, /dev/udp (bash's network sockets) are
//     denied. Here-documents and here-strings are checked like arguments.
func (ts Tools) CheckCommand(command string) error {
	_, err := ts.Approve(command)
	return err
}

// Approval is a command CheckCommand allowed.
type Approval struct {
	// Argv runs the command in the sandbox: see BashArgv.
	Argv []string
	// Programs are the program names of every simple command in the
	// command, in source order, as the checker read them (a command inside a
	// loop is listed once). A run of Argv executes only these programs, and
	// never a variable assignment unless a bare Bash entry allowed it.
	Programs []string
}

// Approve is CheckCommand returning what it approved.
func (ts Tools) Approve(command string) (Approval, error) {
	c := newChecker(ts, command)
	if d := c.check(); d != nil {
		return Approval{}, d
	}
	return Approval{Argv: BashArgv(command), Programs: c.programs}, nil
}

// BashArgv is how the sandbox runs a checked command. The options make bash
// read the command as the checker's parser does:
//
//   - -O extglob: the checker always parses @(…), !(…) and friends as
//     patterns; without the option bash reads "!(id)" as a negated subshell
//     that runs id.
//   - -p: bash ignores BASH_ENV, ENV, SHELLOPTS, BASHOPTS, CDPATH and
//     GLOBIGNORE from the environment and imports no functions, so no
//     variable can run code before the command or change how it parses. (The
//     sandbox never runs bash set-id, so -p changes nothing else.)
//   - --norc --noprofile: no startup files, whatever bash's defaults.
func BashArgv(command string) []string {
	return []string{"bash", "--norc", "--noprofile", "-p", "-O", "extglob", "-c", command}
}

// checker holds one CheckCommand evaluation.
type checker struct {
	command string
	// hasBash is true when any Bash entry exists; anyBash when a bare one does.
	hasBash, anyBash bool
	specs            []bashSpec
	// entries are the Bash entries as written, for messages.
	entries []string
	// programs collects the program of every allowed simple command.
	programs []string
}

func newChecker(ts Tools, command string) *checker {
	c := &checker{command: command}
	for _, t := range ts {
		if t.Name != bashTool {
			continue
		}
		c.hasBash = true
		c.entries = append(c.entries, t.String())
		if !t.HasSpec {
			c.anyBash = true
			continue
		}
		// An entry built without ParseAllowedTools may not parse; it then
		// allows nothing, which is the safe reading.
		if s, err := parseBashSpec(t.Spec); err == nil {
			c.specs = append(c.specs, s)
		}
	}
	return c
}

func (c *checker) check() *DeniedError {
	if reason := lexicalReason(c.command); reason != "" {
		return c.denyAll(reason)
	}
	f, err := newShellParser().Parse(strings.NewReader(c.command), "")
	if err != nil {
		return c.denyAll(fmt.Sprintf("the command is not valid bash syntax (%v); fix the quoting or operators", err))
	}
	if len(f.Stmts) == 0 {
		return c.denyAll("the command has nothing to run (only comments or blank lines)")
	}
	if !c.hasBash {
		return c.denyNoBash(f)
	}
	return c.stmts(f.Stmts)
}

// denyNoBash refuses a command for a skill whose allowed-tools has no Bash
// entry. A refusal no entry could lift (substitution, eval, ...) is reported
// as such; otherwise the suggestion names the first program the command runs,
// unless a variable assignment comes first, which no scoped entry allows.
func (c *checker) denyNoBash(f *syntax.File) *DeniedError {
	// Walk as if a bare Bash were present: only the structural rules apply.
	c.anyBash = true
	d := c.stmts(f.Stmts)
	c.anyBash = false
	if d != nil {
		return d
	}
	const reason = "the skill's allowed-tools has no Bash entry, so the skill allows no commands"
	for node := range syntax.Preorder(f) {
		st, ok := node.(*syntax.Stmt)
		if !ok {
			continue
		}
		if part := assignment(st.Cmd); part != nil {
			return c.deny(part, reason+"; "+denyNoBashAssignment, "")
		}
		if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			return c.deny(stmtSpan(st), reason, c.suggest(c.words(call.Args)))
		}
	}
	return c.denyAll(reason + "; add an entry such as Bash(<program>:*)")
}

// denyAll refuses the command as a whole.
func (c *checker) denyAll(reason string) *DeniedError {
	return &DeniedError{Command: c.command, Reason: reason}
}

// deny refuses the part of the command that node spans.
func (c *checker) deny(node syntax.Node, reason, suggest string) *DeniedError {
	return &DeniedError{Command: c.command, Part: c.source(node), Reason: reason, Suggest: suggest}
}

// source returns the text of node as written in the command.
func (c *checker) source(node syntax.Node) string {
	start, end := node.Pos().Offset(), node.End().Offset()
	if !node.Pos().IsValid() || !node.End().IsValid() || start >= end || end > uint(len(c.command)) {
		return c.command
	}
	return c.command[start:end]
}

func (c *checker) words(args []*syntax.Word) []cmdWord {
	words := make([]cmdWord, len(args))
	for i, w := range args {
		words[i].value, words[i].static = staticWord(w)
	}
	return words
}

func (c *checker) stmts(list []*syntax.Stmt) *DeniedError {
	for _, s := range list {
		if d := c.stmt(s); d != nil {
			return d
		}
	}
	return nil
}

func (c *checker) stmt(s *syntax.Stmt) *DeniedError {
	if s.Background || s.Coprocess || s.Disown {
		return c.deny(s, "background jobs (&) are not allowed: the sandbox waits only for the foreground command; drop the &", "")
	}
	// Redirections first: a denial of the command itself then quotes a part
	// whose redirections are known to be fine.
	for _, r := range s.Redirs {
		if d := c.redirect(r); d != nil {
			return d
		}
	}
	if s.Cmd == nil {
		return nil // only redirections, e.g. "> file"
	}
	return c.command1(s)
}

// span is a syntax.Node covering a range of the command.
type span struct{ pos, end syntax.Pos }

func (s span) Pos() syntax.Pos { return s.pos }
func (s span) End() syntax.Pos { return s.end }

// stmtSpan covers a statement with its redirections and here-document bodies
// but without the trailing ; or &.
func stmtSpan(s *syntax.Stmt) span {
	end := s.Cmd.End()
	for _, r := range s.Redirs {
		if r.End().After(end) {
			end = r.End()
		}
	}
	return span{pos: s.Pos(), end: end}
}

// command1 checks the command of s; anything not listed is denied.
func (c *checker) command1(s *syntax.Stmt) *DeniedError {
	switch x := s.Cmd.(type) {
	case *syntax.CallExpr:
		return c.call(x, stmtSpan(s))
	case *syntax.BinaryCmd:
		// && || | |& : every side must be allowed.
		if d := c.stmt(x.X); d != nil {
			return d
		}
		return c.stmt(x.Y)
	case *syntax.Subshell:
		return c.stmts(x.Stmts)
	case *syntax.Block:
		return c.stmts(x.Stmts)
	case *syntax.IfClause:
		return c.ifClause(x)
	case *syntax.WhileClause:
		if d := c.stmts(x.Cond); d != nil {
			return d
		}
		return c.stmts(x.Do)
	case *syntax.ForClause:
		return c.forClause(x)
	case *syntax.CaseClause:
		return c.caseClause(x)
	case *syntax.TestClause:
		return c.test(x.X)
	case *syntax.TimeClause:
		if x.Stmt == nil {
			return nil
		}
		return c.stmt(x.Stmt)
	case *syntax.FuncDecl:
		return c.deny(x, "function definitions are not allowed: a function would run commands under a name the policy cannot check; write the commands inline", "")
	case *syntax.ArithmCmd, *syntax.LetClause:
		return c.deny(x, denyArithmetic, "")
	case *syntax.DeclClause:
		return c.deny(x, "declare, typeset, local, export, readonly and nameref change shell variables and attributes and are not allowed; pass values as arguments (with a bare Bash entry, FOO=1 cmd sets a variable for one command)", "")
	case *syntax.CoprocClause:
		return c.deny(x, "coproc is not allowed: it runs a command in the background; run it in the foreground", "")
	default:
		return c.deny(x, fmt.Sprintf("this shell construct (%T) is not understood by the policy and is denied; rewrite it as plain commands", x), "")
	}
}

const denyArithmetic = "arithmetic ((( )), $(( )), let, array subscripts, numeric [[ ]] comparisons) is not allowed: bash evaluates it in a way that can run commands; compute values inside a script instead"

func (c *checker) ifClause(x *syntax.IfClause) *DeniedError {
	for ; x != nil; x = x.Else {
		if d := c.stmts(x.Cond); d != nil {
			return d
		}
		if d := c.stmts(x.Then); d != nil {
			return d
		}
	}
	return nil
}

func (c *checker) forClause(x *syntax.ForClause) *DeniedError {
	if x.Select {
		return c.deny(x, "select is not allowed: it is interactive; loop with for instead", "")
	}
	switch loop := x.Loop.(type) {
	case *syntax.WordIter:
		if d := c.loopVar(loopHeader(x, loop), loop); d != nil {
			return d
		}
	default:
		return c.deny(x, denyArithmetic, "")
	}
	return c.stmts(x.Do)
}

func (c *checker) caseClause(x *syntax.CaseClause) *DeniedError {
	if d := c.word(x.Word); d != nil {
		return d
	}
	for _, item := range x.Items {
		for _, p := range item.Patterns {
			if d := c.word(p); d != nil {
				return d
			}
		}
		if d := c.stmts(item.Stmts); d != nil {
			return d
		}
	}
	return nil
}

// test checks a [[ ]] expression. Arithmetic comparisons and -v/-R are
// refused because bash evaluates their operands (including array subscripts
// such as a[$(cmd)]) as arithmetic, which can run commands.
func (c *checker) test(x syntax.TestExpr) *DeniedError {
	switch t := x.(type) {
	case *syntax.Word:
		return c.word(t)
	case *syntax.ParenTest:
		return c.test(t.X)
	case *syntax.UnaryTest:
		if t.Op == syntax.TsVarSet || t.Op == syntax.TsRefVar {
			return c.deny(t, "[[ -v ]] and [[ -R ]] are not allowed: bash evaluates array subscripts in their operand; test [[ -n \"$VAR\" ]] instead", "")
		}
		return c.test(t.X)
	case *syntax.BinaryTest:
		switch t.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			return c.deny(t, denyArithmetic, "")
		}
		if d := c.test(t.X); d != nil {
			return d
		}
		return c.test(t.Y)
	default:
		return c.deny(x, fmt.Sprintf("this [[ ]] expression (%T) is not understood by the policy and is denied", x), "")
	}
}
