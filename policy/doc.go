// Package policy decides, before anything reaches Docker, whether an execution
// may run and with what: the allowed-tools grammar and the Bash-command matcher,
// the script path guard, the interpreter choice, the JSON-argument check, the
// effective resource limits and the caller-environment check.
//
// Every function here is pure or reads only the skill's own files; none of them
// runs a program or a shell. policy imports no other package of this module, so
// skill/, sandbox/ and the CLI can all depend on it.
package policy
