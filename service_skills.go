package sandboxrun

import (
	"context"

	"github.com/sandboxrun/sandboxrun/catalog"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/skill"
)

// activate is Door.Activate for owner, with the skill it loaded (nil when none loaded).
func (s *Service) activate(owner, ref string) (*skill.Skill, *skill.Activation, error) {
	rs, err := s.ResolveSkill(owner, ref)
	if err != nil {
		return nil, nil, err
	}
	sk := rs.Skill
	a, err := sk.Activate()
	if err != nil {
		return sk, nil, err
	}
	a.AllowedTools = s.withGrants(sk, rs.Source, a.AllowedTools)
	return sk, a, nil
}

// withGrants are a skill's entries as its activation resolved them
// ({baseDir} and plugin placeholders), then what the operator grants it
// (an uploaded skill, by source: nothing by name).
func (s *Service) withGrants(sk *skill.Skill, source catalog.Source, tools bashcheck.Tools) bashcheck.Tools {
	if extra := source.Policy(s.pol).ExtraTools(sk.Manifest.Name); len(extra) > 0 {
		return append(append(bashcheck.Tools{}, tools...), extra...)
	}
	return tools
}

// BuildImage builds the image of the skill named ref unless an up-to-date
// one exists, with the operator's package grants and sources. o.Policy is
// replaced by the Service's; o.Pip defaults to the Service's. A skill
// without packages gives ErrNoDependencies.
func (s *Service) BuildImage(ctx context.Context, ref string, o BuildOptions) (images.Image, error) {
	sk, err := s.Skill(ref)
	if err != nil {
		return images.Image{}, err
	}
	o.Policy = s.pol
	if o.Pip.IndexURL == "" && len(o.Pip.FindLinks) == 0 && len(o.Pip.TrustedHosts) == 0 {
		o.Pip = s.cfg.Pip
	}
	return s.imageEnv().Build(ctx, sk, o)
}

// ErrNeedsBuild means a skill's image is missing and building it was not
// allowed (--no-build). The message names the command that builds it.
var ErrNeedsBuild = skillimage.ErrNeedsBuild

// ErrNoDependencies means a skill declares no packages, so it has no image
// of its own: it runs in the runner image.
var ErrNoDependencies = skillimage.ErrNoDependencies

// BuildOptions configure how a skill's image is found and built
// (Service.BuildImage).
type BuildOptions = skillimage.Options

// imageEnv names the images, the runner (and its profiles) and the
// version skill images record, on the Service's image engine: every skill
// image question (which image, build, prune) is internal/skillimage's.
func (s *Service) imageEnv() skillimage.Env {
	return skillimage.Env{RunnerImage: RunnerImage(), Version: Version, Images: s.cfg.Images}
}
