package skillimage

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

// ErrNoDependencies means a skill declares no packages, so it has no image
// of its own: it runs in the runner image.
var ErrNoDependencies = errors.New("skill declares no packages")

// Runner is the image a skill runs in when it has no image of its own,
// and the one its image is built on: runnerImage, or the runner profile
// (documents, office) pol picks for the skill; pol nil picks none.
func Runner(pol *policy.Operator, runnerImage, skillName string) (string, error) {
	var profile string
	if pol != nil {
		profile = pol.Profile(skillName)
	}
	return images.ProfileRef(runnerImage, profile)
}

// BuildInputs are what a skill image's build takes besides the skill and
// the policy.
type BuildInputs struct {
	// Pip says where pip finds packages.
	Pip images.PipConfig
	// Progress receives the build's progress lines; nil discards them.
	Progress io.Writer
	// NoCache rebuilds even when an up-to-date image exists.
	NoCache bool
	// SourceBuilds lets pip build packages without a wheel.
	SourceBuilds bool
	// Version is sandboxrun's, recorded in the image's labels.
	Version string
}

// ImageOptions collects a skill's dependencies, with the policy's
// package grants and default package source (pol nil: none), into the
// options of its image, built on runner. A malformed PEP 723 block or
// package name is an error naming the file and line; a skill without
// packages gives ErrNoDependencies.
func ImageOptions(sk *skill.Skill, pol *policy.Operator, runner string, b BuildInputs) (images.SkillOptions, error) {
	deps, err := sk.Dependencies()
	if err != nil {
		return images.SkillOptions{}, err
	}
	pip := b.Pip
	if pol != nil {
		system, python := pol.ExtraPackages(sk.Manifest.Name)
		deps.System = appendNew(deps.System, system...)
		deps.Python = appendNew(deps.Python, python...)
		slices.Sort(deps.System)
		slices.Sort(deps.Python)
		if fl := pol.FindLinks(); fl != "" && !slices.Contains(pip.FindLinks, fl) {
			pip.FindLinks = append(slices.Clone(pip.FindLinks), fl)
		}
	}
	if deps.Empty() {
		return images.SkillOptions{}, fmt.Errorf("skill %s: %w: it runs in the runner image %s", sk.Manifest.Name, ErrNoDependencies, runner)
	}
	req := make([]string, 0, len(deps.RequiresPython))
	for _, c := range deps.RequiresPython {
		req = append(req, c.Spec)
	}
	return images.SkillOptions{
		Skill:          sk.Manifest.Name,
		Runner:         runner,
		PythonPackages: deps.Python,
		SystemPackages: deps.System,
		RequiresPython: req,
		Pip:            pip,
		Version:        b.Version,
		Progress:       b.Progress,
		NoCache:        b.NoCache,
		SourceBuilds:   b.SourceBuilds || (pol != nil && pol.SourceBuilds()),
	}, nil
}

// appendNew appends the values not already in list.
func appendNew(list []string, values ...string) []string {
	for _, v := range values {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}
