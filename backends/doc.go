// Package backends picks the sandbox backend an operator policy selects
// and builds it: the host's Docker engine (sandbox/docker), or a cluster
// (sandbox/kube) for backend: kubernetes. The commands hand New to
// sandboxrun.Config.Backend; the sandboxrun package itself links neither
// backend, so a library user who embeds only the Docker backend
// (backends/dockerbackend) does not link the Kubernetes client.
package backends
