// Package kube runs sandboxrun executions on Kubernetes, one Pod per
// execution, with the same contract as the Docker runner: sandbox-init is
// the entrypoint, the job goes over attach, frames come back on the same
// stream and the result frame ends the run. The Pod's security settings
// mirror the Docker container's, and runs without network are refused
// unless a probe Pod has shown that pods get the loopback interface only.
package kube
