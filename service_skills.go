package sandboxrun

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Skills lists the skills under the configured roots, metadata only
// (progressive disclosure: no body is read), in every layout skill.Discover
// knows. A broken skill, or a second one claiming a name, becomes an error in
// the second result and is left out of the first.
func (s *Service) Skills() ([]*skill.Skill, []error) {
	return skill.Discover(s.cfg.SkillRoots...)
}

// fixedByOperator is what a remote caller is told of a broken operator
// skill in place of the CLI command that shows why: it cannot run it.
const fixedByOperator = "the server's operator has to fix the skill"

// Skill loads a skill whole (frontmatter and body) by name, or folder
// name, from the skill roots, or, when Config.AllowSkillPaths is set, by a
// path to its folder. A missing skill matches skill.ErrSkillNotFound; a
// broken one, skill.ErrInvalidManifest or a parse error. Both match
// ErrRefused. What sandboxrun chose for it (another skill of the name
// shadowed, a name that breaks a spec rule) goes to Config.Warn; with
// Config.Strict a broken spec rule refuses the skill.
func (s *Service) Skill(ref string) (*skill.Skill, error) {
	if !s.cfg.AllowSkillPaths {
		if err := checkSkillName(ref); err != nil {
			return nil, refused(err)
		}
	}
	if s.loaded != nil {
		s.loaded()
	}
	loc, err := skill.Locate(s.cfg.SkillRoots, ref)
	if err != nil {
		if !errors.Is(err, skill.ErrSkillNotFound) {
			err = where.Errorf("%w (%s)", err, where.ForOperator{Operator: "run 'sandboxrun validate' on the skill for details", Others: fixedByOperator})
		}
		return nil, refused(err)
	}
	for _, w := range loc.Warnings {
		s.warn(w)
	}
	sk, err := skill.Load(loc.Dir)
	if err != nil {
		return nil, refused(where.Errorf("%w (%s)", err, where.ForOperator{Operator: "run 'sandboxrun validate " + loc.Dir + "' for details", Others: fixedByOperator}))
	}
	if s.cfg.Strict {
		if err := sk.Strict(); err != nil {
			return nil, refused(fmt.Errorf("%w (--strict refuses skills that break a spec rule; fix them, or run without --strict)", err))
		}
	}
	for _, w := range sk.Warnings() {
		s.warn(sk.Path + ": " + w)
	}
	return sk, nil
}

func (s *Service) warn(msg string) {
	if s.cfg.Warn != nil {
		s.cfg.Warn(msg)
		return
	}
	s.log.Warn(msg)
}

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
func (s *Service) withGrants(sk *skill.Skill, source string, tools bashcheck.Tools) bashcheck.Tools {
	if extra := s.policyFor(source).ExtraTools(sk.Manifest.Name); len(extra) > 0 {
		return append(append(bashcheck.Tools{}, tools...), extra...)
	}
	return tools
}

// checkSkillName refuses what could make a remote caller's skill reference
// reach outside the skill roots: a path, an empty name, a control byte.
func checkSkillName(ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("%w: the skill name is empty", skill.ErrSkillNotFound)
	case ref == "." || ref == ".." || strings.ContainsAny(ref, `/\`):
		return fmt.Errorf("%w: %q is a path; name a skill by its name (see the skill list)", skill.ErrSkillNotFound, ref)
	case len(ref) > 256 || strings.ContainsFunc(ref, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: %q is not a skill name", skill.ErrSkillNotFound, ref)
	}
	return nil
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
