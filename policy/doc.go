// Package policy decides, before anything reaches Docker, whether an execution
// may run and with what: the operator's policy file, the script path guard,
// the interpreter choice, the JSON-argument check, the effective resource
// limits, the network allowlist (what a run may reach: the skill's
// allowed_domains held to the operator's), the caller-environment check,
// and the secrets and HTTP rules the egress proxy applies. Whether a
// command matches the skill's allowed-tools is package bashcheck's
// answer, which the decision here takes (a denial is ErrDenied); the
// grammar of hosts, allowlists and HTTP rules is package egressrule's.
//
// Every function here is pure or reads only the skill's own files; none of them
// runs a program or a shell. policy imports no other package of this module
// but its own subpackages and internal ones, so skill/, sandbox/ and the CLI
// can all depend on it.
package policy
