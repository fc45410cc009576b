// Package sandbox runs one command of an Agent Skill in its own ephemeral,
// locked-down Docker container and reports what happened as a Result.
//
// A Spec says what to run and within which limits (policy has decided both);
// a Runner enforces them. Docker is the Runner on a Docker engine: it creates
// the container with the hardened configuration of config.go, attaches
// before starting, hands the job to sandbox-init (the container's PID 1)
// over stdin, decodes the framed output, inspects for OOM and removes the
// container on every path. Because the job travels over stdin after start,
// WithWarmPool can start containers before their job exists. Reap removes
// containers that a crashed owner left behind.
package sandbox
