// Package cgroup reads a sandbox's resource use (CPU time, memory, pids)
// from the host's cgroup file system, version 1 or 2: the live usage of
// the backends whose sandboxes' cgroups the host can see (Docker on the
// same host, runc).
package cgroup
