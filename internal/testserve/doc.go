// Package testserve starts `sandboxrun serve` on loopback and waits until
// it answers: the one way the integration tests, the Go client's tests and
// the benchmarks bring up a real server. It is plumbing for them, never
// linked into the product.
package testserve
