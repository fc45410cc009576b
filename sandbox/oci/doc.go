// Package oci runs sandboxrun executions by driving an OCI runtime (runc,
// crun, runsc) directly, with no engine in between: each run is a bundle
// whose config.json gives the sandbox what the Docker backend's container
// gets, on a read-only root file system unpacked once per image under the
// backend's state folder. sandbox-init is the container's PID 1 and speaks
// the same job and frame protocol over the runtime's stdin and stdout.
//
// Creating namespaces, cgroups and mounts needs root: New refuses to start
// without it.
package oci
