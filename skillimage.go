package sandboxrun

import (
	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
)

// ErrNeedsBuild means a skill's image is missing and building it was not
// allowed (--no-build). The message names the command that builds it.
var ErrNeedsBuild = skillimage.ErrNeedsBuild

// ErrNoDependencies means a skill declares no packages, so it has no image
// of its own: it runs in the runner image.
var ErrNoDependencies = plan.ErrNoDependencies

// BuildOptions configure how a skill's image is found and built
// (Service.BuildImage).
type BuildOptions = skillimage.Options

// imageEnv names the images, the runner (and its profiles) and the
// version skill images record, on the Service's image engine.
func (s *Service) imageEnv() skillimage.Env {
	return skillimage.Env{RunnerImage: RunnerImage(), Version: Version, Images: s.cfg.Images}
}
