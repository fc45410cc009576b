// Package policy decides, before anything reaches Docker, whether an execution
// may run and with what: the allowed-tools grammar and the Bash-command matcher,
// the script path guard, the interpreter choice, the JSON-argument check, the
// effective resource limits, the network allowlist (its grammar, and what a
// run may reach: the skill's allowed_domains held to the operator's) and the
// caller-environment check, and the secrets and HTTP rules the egress
// proxy applies (secrets.go, httprules.go).
//
// A scoped Bash entry such as Bash(git status:*) allows that program, not a
// changed environment for it: a command checked against scoped entries may not
// assign variables, because the program would read them (GIT_*, HOME) and
// could be made to run other code.
//
// Every function here is pure or reads only the skill's own files; none of them
// runs a program or a shell. policy imports no other package of this module, so
// skill/, sandbox/ and the CLI can all depend on it.
package policy
