// Package egresslog holds what the egress proxy tells about a run: each
// request it judged (Decision), the run's egress at a glance (Summary) and
// the whole record for the audit log (Record). It imports nothing of the
// proxy, so the sandbox contract (sandbox.Result) and the audit log carry
// these values without linking the proxy.
package egresslog
