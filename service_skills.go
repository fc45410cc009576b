package sandboxrun

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Skills lists the skills under the configured roots, metadata only
// (progressive disclosure: no body is read). A broken skill becomes an error
// in the second result and is left out of the first.
func (s *Service) Skills() ([]*skill.Skill, []error) {
	var all []*skill.Skill
	var errs []error
	seen := map[string]string{}
	for _, root := range s.cfg.SkillRoots {
		found, ferrs := skill.Discover(root)
		errs = append(errs, ferrs...)
		for _, sk := range found {
			if first, dup := seen[sk.Manifest.Name]; dup {
				errs = append(errs, fmt.Errorf("%s: skill name %q is already used by %s; the first root wins, rename one of them",
					sk.Path, sk.Manifest.Name, first))
				continue
			}
			seen[sk.Manifest.Name] = sk.Dir
			all = append(all, sk)
		}
	}
	return all, errs
}

// Skill loads a skill whole (frontmatter and body) by name from the skill
// roots, or, when Config.AllowSkillPaths is set, by a path to its folder. A
// missing skill matches skill.ErrSkillNotFound; a broken one,
// skill.ErrInvalidManifest or a parse error. Both match ErrRefused.
func (s *Service) Skill(ref string) (*skill.Skill, error) {
	if !s.cfg.AllowSkillPaths {
		if err := checkSkillName(ref); err != nil {
			return nil, refused(err)
		}
	}
	var dir string
	var err error
	for _, root := range s.cfg.SkillRoots {
		dir, err = skill.Resolve(root, ref)
		if !errors.Is(err, skill.ErrSkillNotFound) {
			break
		}
	}
	if err != nil {
		return nil, refused(err)
	}
	sk, err := skill.Load(dir)
	if err != nil {
		return nil, refused(fmt.Errorf("%w (run 'sandboxrun validate %s' for details)", err, dir))
	}
	return sk, nil
}

// Activate returns what an agent reads when it chooses a skill: the body
// with {baseDir} resolved to the skill's sandbox folder, its scripts,
// references and assets, and its allowed tools with the operator's grants.
func (s *Service) Activate(ref string) (*skill.Activation, error) {
	sk, err := s.Skill(ref)
	if err != nil {
		return nil, err
	}
	a, err := sk.Activate()
	if err != nil {
		return nil, err
	}
	a.AllowedTools = AllowedTools(sk, s.pol)
	return a, nil
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
	return BuildSkillImage(ctx, sk, o)
}
