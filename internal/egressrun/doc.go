// Package egressrun gives the runs whose limits carry an egress allowlist
// their own egress proxy around the sandbox, and removes the proxies'
// folders that owners killed mid-run left behind.
package egressrun
