// Package kube runs sandboxrun executions on Kubernetes, one Pod per
// execution, as a driver of sandbox/engine, which owns the run flow (checks,
// slots, warm pool, job, frames, Result, teardown) for every backend. This
// package keeps what is Kubernetes' own: the Pod (sandbox-init as the
// entrypoint, security mirroring the Docker container's), the API calls,
// the job over attach and the side channel on that stream, the Pod's log
// as a second copy of the frames, the cluster's capacity, and the proof
// that Pods get the loopback interface only, without which runs without
// network are refused.
package kube
