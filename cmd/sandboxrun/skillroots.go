package main

import (
	"errors"
	"fmt"
	"os"

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

// loadSkill resolves a SKILL argument and reads the whole skill. What
// sandboxrun chose for it (another skill of the name shadowed, a name that
// breaks a rule) is printed as warnings; with --strict a rule broken refuses
// the skill.
func loadSkill(g *globals, ref string) (*skill.Skill, error) {
	loc, err := skill.Locate(g.skillsRoots(), ref)
	if err != nil {
		if !errors.Is(err, skill.ErrSkillNotFound) {
			err = fmt.Errorf("%w (run 'sandboxrun validate' on the skill for details)", err)
		}
		return nil, withCode(exitRefused, err)
	}
	for _, w := range loc.Warnings {
		g.warn("%s", w)
	}
	sk, err := skill.Load(loc.Dir)
	if err != nil {
		return nil, withCode(exitRefused, fmt.Errorf("%w (run 'sandboxrun validate %s' for details)", err, loc.Dir))
	}
	if g.strict {
		if err := sk.Strict(); err != nil {
			return nil, withCode(exitRefused, fmt.Errorf("%w (--strict refuses skills that break a spec rule; fix them, or run without --strict)", err))
		}
	}
	for _, w := range sk.Warnings() {
		g.warn("%s: %s", sk.Path, w)
	}
	return sk, nil
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
