package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/skill"
)

// skillsRoots is --skills, else $SANDBOXRUN_SKILLS, else ./skills; either
// may list several roots, ':'-separated.
func (g *globals) skillsRoots() []string {
	for _, list := range []string{g.skills, os.Getenv("SANDBOXRUN_SKILLS")} {
		if roots := skill.SplitRoots(list); len(roots) > 0 {
			return roots
		}
	}
	return []string{"skills"}
}

// existingRoots is skillsRoots for the commands that walk every skill: each
// root must be a folder.
func (g *globals) existingRoots() ([]string, error) {
	roots := g.skillsRoots()
	for _, root := range roots {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, usageError("skills root %q is not a folder: pass --skills DIR (several: A:B) or set SANDBOXRUN_SKILLS", root)
		}
	}
	return roots, nil
}

// warn tells the user something about a skill without stopping the command.
func (g *globals) warn(format string, args ...any) {
	fmt.Fprintf(g.warnings, "sandboxrun: warning: "+format+"\n", args...)
}

// loadSkill resolves a SKILL argument (a name under the skills roots, or a
// path to a skill folder) and reads the whole skill, the way every run does:
// warnings on stderr, --strict refusing a skill that breaks a spec rule.
func loadSkill(g *globals, ref string) (*skill.Skill, error) {
	svc, err := g.skillService()
	if err != nil {
		return nil, err
	}
	return svc.Skill(ref)
}

// serviceConfig is what every Service the CLI builds shares: the roots,
// the policy, --strict, warnings on stderr, and paths allowed for skills.
func (g *globals) serviceConfig() sandboxrun.Config {
	return sandboxrun.Config{
		SkillRoots:      g.skillsRoots(),
		AllowSkillPaths: true,
		Policy:          g.pol,
		Strict:          g.strict,
		Warn:            func(msg string) { g.warn("%s", msg) },
		Logger:          g.logger,
		Backend:         backends.New,
		Images:          backends.Images(),
	}
}

// skillService is a Service for commands that read skills but run nothing.
func (g *globals) skillService() (*sandboxrun.Service, error) {
	return sandboxrun.New(g.serviceConfig())
}

// discoverSkills finds the skills under the roots for list and build --all,
// reporting on stderr what it skips and what it warns about; --strict leaves
// out a skill that breaks a spec rule.
func discoverSkills(g *globals, s streams, roots []string) []*skill.Skill {
	skills, problems := skill.Discover(roots...)
	for _, err := range problems {
		var dup *skill.DuplicateError
		if errors.As(err, &dup) {
			g.warn("%v", err)
			continue
		}
		fmt.Fprintf(s.err, "sandboxrun: skipping: %v\n", err)
	}
	kept := skills[:0]
	for _, sk := range skills {
		if g.strict {
			if err := sk.Strict(); err != nil {
				fmt.Fprintf(s.err, "sandboxrun: skipping (--strict): %v\n", err)
				continue
			}
		}
		for _, w := range sk.Warnings() {
			g.warn("%s: %s", sk.Path, w)
		}
		kept = append(kept, sk)
	}
	return kept
}
