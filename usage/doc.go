// Package usage counts what each tenant (a bearer token, by its label)
// used — runs, CPU time, memory reserved over time, egress bytes — in
// fixed windows of the clock, checks quotas against those counts before a
// run starts, and keeps the counts in a state file that survives a restart
// or a kill of the server.
package usage
