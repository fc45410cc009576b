// Package sandboxrun ties the pieces together: it turns a skill and a caller's
// request into a checked sandbox.Spec (policy first, Docker never sees a
// refused request), and records what ran in an append-only audit log.
//
// The skill model lives in package skill, the rules in package policy, and the
// container runtime in package sandbox; cmd/sandboxrun is a thin CLI over this
// package.
package sandboxrun
