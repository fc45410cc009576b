package bashcheck

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A scoped entry such as Bash(git status:*) promises that only that program
// runs, but a program's environment can make it run other code:
// GIT_CONFIG_PARAMETERS or GIT_EXTERNAL_DIFF name commands for git, and a
// changed HOME makes git read a planted .gitconfig. Any variable may be
// exported (the sandbox's environment, --env), so under scoped entries every
// assignment is denied whatever its name: prefix (X=1 cmd), standalone (X=1,
// X+=1) and for-loop variables. A bare Bash entry allows every program anyway,
// so there only the assignments that steer the shell itself are denied.
const denyScopedAssignment = "variable assignments are not allowed with scoped Bash entries: they change what the allowed program does (e.g. GIT_* or HOME, read from its environment); pass values as arguments, move the logic into a script under scripts/, or allow Bash without a scope"

// denyNoBashAssignment extends the no-Bash-entry refusal when the command
// sets variables, which no scoped entry could allow either.
const denyNoBashAssignment = "its variable assignments would also need Bash without a scope, because they change what a program does (e.g. GIT_* or HOME); pass values as arguments or move the logic into a script under scripts/"

// steeringVars change how the shell finds, loads or runs programs; setting
// one would make an allowed program name run something else (PATH=/tmp git).
// They are denied even with a bare Bash entry, so that what the policy reports
// about a command (which programs it runs) stays true.
var steeringVars = map[string]bool{
	"PATH": true, "IFS": true, "ENV": true, "BASH_ENV": true, "SHELLOPTS": true,
	"BASHOPTS": true, "PS4": true, "GLOBIGNORE": true, "CDPATH": true,
	"PROMPT_COMMAND": true, "HOSTFILE": true, "INPUTRC": true,
}

// steeringPrefixes cover the dynamic loader (LD_PRELOAD, ...) and bash's own
// variables (BASH_FUNC_*, BASH_XTRACEFD, ...).
var steeringPrefixes = []string{"LD_", "BASH_"}

func (c *checker) varName(node syntax.Node, name string) *DeniedError {
	steers := steeringVars[name]
	for _, p := range steeringPrefixes {
		steers = steers || strings.HasPrefix(name, p)
	}
	if steers {
		return c.deny(node, fmt.Sprintf("setting %s is not allowed: it changes how the shell finds or loads programs; the sandbox sets it", name), "")
	}
	return nil
}

// assign checks one assignment, prefix or standalone. The refusals that hold
// for every entry come first, so their more specific fix is the one reported.
func (c *checker) assign(a *syntax.Assign) *DeniedError {
	if a.Index != nil || a.Array != nil {
		return c.deny(a, "array assignments are not allowed: bash evaluates subscripts as arithmetic; pass lists as arguments instead", "")
	}
	if a.Name == nil {
		return c.deny(a, "this assignment is not understood by the policy and is denied", "")
	}
	if d := c.varName(a, a.Name.Value); d != nil {
		return d
	}
	if d := c.word(a.Value); d != nil {
		return d
	}
	if !c.anyBash {
		return c.deny(a, denyScopedAssignment, "")
	}
	return nil
}

// loopVar checks the variable of "for NAME in WORDS", which bash assigns like
// NAME=WORD before each pass; header is the part a denial quotes.
func (c *checker) loopVar(header syntax.Node, it *syntax.WordIter) *DeniedError {
	if d := c.varName(header, it.Name.Value); d != nil {
		return d
	}
	for _, w := range it.Items {
		if d := c.word(w); d != nil {
			return d
		}
	}
	if !c.anyBash {
		return c.deny(header, denyScopedAssignment, "")
	}
	return nil
}

// loopHeader covers "for NAME in WORDS" without the body, the part of a loop
// that assigns.
func loopHeader(x *syntax.ForClause, it *syntax.WordIter) span {
	end := it.Name.End()
	if n := len(it.Items); n > 0 {
		end = it.Items[n-1].End()
	}
	return span{pos: x.Pos(), end: end}
}

// assignment returns the part of cmd that sets a variable (its first
// assignment or its loop header), or nil when cmd sets none itself.
func assignment(cmd syntax.Command) syntax.Node {
	switch x := cmd.(type) {
	case *syntax.CallExpr:
		if len(x.Assigns) > 0 {
			return x.Assigns[0]
		}
	case *syntax.ForClause:
		if it, ok := x.Loop.(*syntax.WordIter); ok {
			return loopHeader(x, it)
		}
	}
	return nil
}
