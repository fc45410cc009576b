// Package docker is the sandbox backend for a Docker engine: the only
// package that creates sandbox containers (images/ builds their images).
//
// Runner creates each execution's container with the hardened
// configuration of config.go, attaches before starting, hands the job to
// sandbox-init (the container's PID 1) over stdin, decodes the framed
// output and answers at the result frame; the container is removed in the
// background on every path. Because the job travels over stdin after
// start, WithWarmPool can start containers before their job exists. Reap
// removes containers that a crashed owner left behind.
package docker
