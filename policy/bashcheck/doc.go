// Package bashcheck is the Bash tool's grammar and matcher: it parses a
// skill's allowed-tools (Bash(git status:*), Read, Write, ...), checks a
// command line against them (every simple command must match an entry;
// anything whose effect cannot be read from the text is denied, with the
// part, the reason and the entry that would allow it), and relates a
// SKILL.md's script references to the entries (SkillRefs).
//
// A scoped Bash entry such as Bash(git status:*) allows that program, not a
// changed environment for it: a command checked against scoped entries may
// not assign variables, because the program would read them (GIT_*, HOME)
// and could be made to run other code.
//
// The command is parsed as shell words (mvdan.cc/sh) and never run. Package
// policy decides with it: a denial is policy.ErrDenied.
package bashcheck
