// Package sandbox is the contract every sandbox backend keeps: a Spec says
// what to run and within which limits (policy has decided both), a Runner
// runs it in a sandbox of its own, and a Result says what happened, with the
// same conventions (exit 124 on timeout, -N for signal N, OOM, capped UTF-8
// output) whatever the backend.
//
// Besides the types, it holds what the backends share so that a Result
// means the same everywhere: PrepareSpec (defaults, validation, host-side
// checks before any engine call), JobFor (what sandbox-init receives),
// Output (frame decoding into bounded captures) and Output.Finish, the
// labels and owner checks reapers use. The backends are sandbox/docker and
// sandbox/kube; sandboxtest holds the conformance suite both pass.
package sandbox
