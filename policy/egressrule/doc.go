// Package egressrule is the grammar of what a run may reach: hosts and
// allowlist entries (example.com, *.example.com:8443, an IP), allowlists
// and their intersection, address ranges (ParseCIDR) and HTTP rules (a host
// with the methods and path prefixes allowed on it). It parses and
// matches; package policy decides which rules a run gets, and package
// egress enforces them.
package egressrule
