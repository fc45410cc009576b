// Package docker is the sandbox backend for a Docker engine: a driver of
// the run engine (sandbox/engine), which owns the run flow (checks, slots,
// warm pool, job, frames, Result, teardown).
//
// What is Docker's stays here: the hardened container configuration of
// config.go, the engine API calls behind Client (create, attach before
// start, kill, inspect, remove), the usr volumes of fuse-overlayfs
// engines, a writable workspace shared as a copy-on-write view or, where a
// view cannot reach the container, copied in and out of a volume, the
// retries of removals the engine was away for, the host's facts for
// doctor, and Reap of what a crashed owner left behind.
package docker
