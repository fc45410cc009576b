package dockerbackend

import (
	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

var _ sandboxrun.Engine = (*docker.Runner)(nil)

// Images is the image client over the Docker engine the environment names
// (DOCKER_HOST and friends), for Config.Images. Images are built on the
// Docker engine whichever backend runs them (a Kubernetes node reads the
// engine's images). It connects on first use.
func Images() *images.Client { return images.New(dialImages) }

func dialImages() (images.Engine, error) {
	api, err := docker.NewImageAPI()
	if err != nil {
		return nil, err
	}
	return api, nil
}

// New builds the Docker backend with the Service's settings (logger,
// concurrency bound, warm pool, OCI runtime, the policy's usr volumes),
// whatever backend the policy names. It does not contact the engine. It
// has the shape of sandboxrun.Config's Backend field.
func New(cfg sandboxrun.Config) (sandboxrun.Engine, error) {
	pol := cfg.Policy
	if pol == nil {
		pol = policy.BuiltinPolicy()
	}
	opts := []docker.Option{
		docker.WithVersion(sandboxrun.Version),
		docker.WithDefaultImage(sandboxrun.RunnerImage()),
		docker.WithOCIRuntime(cfg.OCIRuntime),
		docker.WithWarmPoolByDemand(cfg.WarmPool, cfg.WarmIdle),
		docker.WithUsrVolumes(pol.Docker.UsrVolumesOn()),
	}
	if cfg.Logger != nil {
		opts = append(opts, docker.WithLogger(cfg.Logger))
	}
	if cfg.MaxConcurrent > 0 {
		opts = append(opts, docker.WithMaxConcurrent(cfg.MaxConcurrent))
	}
	return docker.New(opts...)
}
