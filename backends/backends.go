package backends

import (
	"log/slog"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends/dockerbackend"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
)

// New builds the backend cfg.Policy selects (nil: the built-in policy, so
// Docker), with the Service's settings: logger, concurrency bound, warm
// pool, OCI runtime. It contacts neither the engine nor the cluster; the
// Service pings on first use. It has the shape of sandboxrun.Config's
// Backend field.
func New(cfg sandboxrun.Config) (sandboxrun.Engine, error) {
	pol := cfg.Policy
	if pol == nil {
		pol = policy.BuiltinPolicy()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch pol.Backend.Kind() {
	case policy.BackendKubernetes:
		return newKube(pol, log, cfg.MaxConcurrent, cfg.Replica)
	case policy.BackendOCI:
		return newOCI(pol, log, cfg.MaxConcurrent, cfg.OCIRuntime)
	}
	return dockerbackend.New(cfg)
}

// Images is the image client for Config.Images: images are built on the
// host's Docker engine whichever backend the policy selects
// (dockerbackend.Images).
func Images() *images.Client { return dockerbackend.Images() }
