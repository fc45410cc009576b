// Package sandboxtest is the behavioural contract of a sandbox.Runner as a
// conformance suite: exit codes, signals, timeout, out of memory, output
// caps, read-only skill and root, non-root without privileges, no network,
// the job's stdin and environment. Every backend (Docker, Kubernetes) runs
// the same cases from its own integration tests, so a Result means the
// same thing whichever backend produced it.
package sandboxtest
