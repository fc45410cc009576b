// Package dockerbackend builds the Docker backend (sandbox/docker) from a
// sandboxrun.Config, for a library user who runs sandboxes on the host's
// Docker engine only: it links no Kubernetes package, where
// backends.New, which can also build the Kubernetes backend, does.
package dockerbackend
