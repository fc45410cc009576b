// Package testlog is the one log sink of the tests: a buffer that a
// server's handlers, a proxy's connections or a child's stderr write from
// their own goroutines while the test reads what has arrived. It is
// plumbing for tests and benchmarks, never linked into the product.
package testlog
