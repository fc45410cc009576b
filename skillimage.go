package sandboxrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// ErrNeedsBuild means a skill's image is missing and building it was not
// allowed (--no-build). The message names the command that builds it.
var ErrNeedsBuild = errors.New("skill image not built")

// ErrNoDependencies means a skill declares no packages, so it has no image
// of its own: it runs in the runner image.
var ErrNoDependencies = errors.New("skill declares no packages")

// BuildOptions configure how a skill's image is found and built.
type BuildOptions struct {
	// Pip says where pip finds packages; see PipConfigFromEnv.
	Pip images.PipConfig
	// NoCache rebuilds even when an up-to-date image exists (build only).
	NoCache bool
	// NoBuild makes ImageFor fail with ErrNeedsBuild instead of building a
	// missing image.
	NoBuild bool
	// Progress receives the build's progress lines; nil discards them.
	Progress io.Writer
	// Runner is the runner image; default RunnerImage().
	Runner string
	// Lookup returns the ID of a local image, or an error matching
	// images.ErrNotFound or sandbox.ErrImageNotFound. Default: images.Inspect,
	// which starts the docker CLI; callers holding a *docker.Runner pass
	// its CheckImage, an Engine API call that keeps the lookup before every
	// run to about a millisecond.
	Lookup func(ctx context.Context, ref string) (string, error)
	// SourceBuilds lets pip build packages without a wheel (as an
	// unprivileged user); off, skill images take wheels only.
	SourceBuilds bool
	// Policy adds the operator's package grants and default package source
	// (find_links) for the skill; nil adds nothing.
	Policy *policy.Operator
}

// runnerFor is the image sk's image is built FROM, and the one sk runs in
// when it declares no packages: o.Runner, else what RunnerFor says.
func (o BuildOptions) runnerFor(sk *skill.Skill) (string, error) {
	if o.Runner != "" {
		return o.Runner, nil
	}
	return RunnerFor(o.Policy, sk.Manifest.Name)
}

// RunnerFor is the image a skill runs in when it has no image of its own:
// the runner image, or the runner profile (documents, office) the operator
// policy chooses for the skill; pol nil means the built-in policy, which
// chooses none.
func RunnerFor(pol *policy.Operator, skillName string) (string, error) {
	if pol == nil {
		return RunnerImage(), nil
	}
	ref, err := images.ProfileRef(RunnerImage(), pol.Profile(skillName))
	if err != nil {
		return "", refused(err)
	}
	return ref, nil
}

// runnerMissing explains a runner (or runner profile) image that is not
// built.
func runnerMissing(ref string) error {
	fix := "`sandboxrun images build` (or `make images`)"
	if i := strings.LastIndex(ref, "-"); i > strings.LastIndex(ref, ":") {
		if profile := ref[i+1:]; policy.CheckProfile(profile) == nil {
			fix = "`sandboxrun images build --profile " + profile + "`"
		}
	}
	return fmt.Errorf("%w: runner image %s is not built: build it with %s", images.ErrNotFound, ref, fix)
}

func (o BuildOptions) lookup(ctx context.Context, ref string) (string, error) {
	if o.Lookup != nil {
		return o.Lookup(ctx, ref)
	}
	id, _, err := images.Inspect(ctx, ref)
	return id, err
}

func isNotFound(err error) bool {
	return errors.Is(err, images.ErrNotFound) || errors.Is(err, sandbox.ErrImageNotFound)
}

// PipConfigFromEnv reads pip's own variables: PIP_INDEX_URL, PIP_FIND_LINKS
// and PIP_TRUSTED_HOST (the last two space-separated lists). They are used
// while building only and never reach the image.
func PipConfigFromEnv(getenv func(string) string) images.PipConfig {
	return images.PipConfig{
		IndexURL:     strings.TrimSpace(getenv("PIP_INDEX_URL")),
		FindLinks:    strings.Fields(getenv("PIP_FIND_LINKS")),
		TrustedHosts: strings.Fields(getenv("PIP_TRUSTED_HOST")),
	}
}

// SkillImageOptions collects a skill's dependencies into the options of its
// image. A malformed PEP 723 block or package name is refused (ErrRefused)
// with the file and line; a skill without packages gives ErrNoDependencies.
func SkillImageOptions(sk *skill.Skill, o BuildOptions) (images.SkillOptions, error) {
	deps, err := sk.Dependencies()
	if err != nil {
		return images.SkillOptions{}, refused(err)
	}
	if o.Policy != nil {
		system, python := o.Policy.ExtraPackages(sk.Manifest.Name)
		deps.System = appendNew(deps.System, system...)
		deps.Python = appendNew(deps.Python, python...)
		slices.Sort(deps.System)
		slices.Sort(deps.Python)
		if fl := o.Policy.FindLinks(); fl != "" && !slices.Contains(o.Pip.FindLinks, fl) {
			o.Pip.FindLinks = append(slices.Clone(o.Pip.FindLinks), fl)
		}
	}
	runner, err := o.runnerFor(sk)
	if err != nil {
		return images.SkillOptions{}, err
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
		Pip:            o.Pip,
		Version:        Version,
		Progress:       o.Progress,
		NoCache:        o.NoCache,
		SourceBuilds:   o.SourceBuilds || (o.Policy != nil && o.Policy.SourceBuilds()),
	}, nil
}

// ImageFor returns the image sk's executions run in: the runner image when
// the skill declares no packages, else its skill image, built first when
// missing (unless o.NoBuild). The lookup of an existing image does not
// depend on o.Pip: an image built from a wheelhouse is used without naming
// the wheelhouse again.
func ImageFor(ctx context.Context, sk *skill.Skill, o BuildOptions) (string, error) {
	opts, err := SkillImageOptions(sk, o)
	return imageFromOptions(ctx, sk, opts, err, o)
}

// imageFromOptions is ImageFor once the skill's image options (or the
// error SkillImageOptions gave) are known.
func imageFromOptions(ctx context.Context, sk *skill.Skill, opts images.SkillOptions, optsErr error, o BuildOptions) (string, error) {
	if errors.Is(optsErr, ErrNoDependencies) {
		runner, err := o.runnerFor(sk)
		if err != nil {
			return "", err
		}
		if runner != RunnerImage() {
			// A profile: say how to build it, rather than the engine's
			// "no such image" at the start.
			if _, err := o.lookup(ctx, runner); isNotFound(err) {
				return "", runnerMissing(runner)
			} else if err != nil {
				return "", err
			}
		}
		return runner, nil
	}
	if optsErr != nil {
		return "", optsErr
	}
	runnerID, err := o.lookup(ctx, opts.Runner)
	if isNotFound(err) {
		return "", runnerMissing(opts.Runner)
	}
	if err != nil {
		return "", err
	}
	tag, err := images.SkillTag(opts, runnerID)
	if err != nil {
		return "", refused(err)
	}
	if _, err := o.lookup(ctx, tag); err == nil {
		return tag, nil
	} else if !isNotFound(err) {
		return "", err
	}
	if o.NoBuild {
		// The folder, not the name: it works whatever skills root the
		// caller used.
		return "", fmt.Errorf("%w: skill %s needs the image %s for its packages; build it with `sandboxrun build %s`, or run without --no-build",
			ErrNeedsBuild, sk.Manifest.Name, tag, sk.Dir)
	}
	img, err := images.EnsureSkill(ctx, opts)
	if err != nil {
		return "", err
	}
	return img.Ref, nil
}

// BuildSkillImage builds sk's image unless an up-to-date one exists (the
// content hash, which includes o.Pip, decides). A skill without packages
// gives ErrNoDependencies.
func BuildSkillImage(ctx context.Context, sk *skill.Skill, o BuildOptions) (images.Image, error) {
	opts, err := SkillImageOptions(sk, o)
	if err != nil {
		return images.Image{}, err
	}
	if err := opts.Validate(); err != nil {
		return images.Image{}, refused(err)
	}
	return images.EnsureSkill(ctx, opts)
}

// pruneSkillImages removes the skill images that no skill under the roots would
// run in now (other package lists, an older runner image), and untagged
// ones. A skill whose dependencies cannot be read keeps all its images and
// is reported in warnings, as is a folder that is not a readable skill.
func pruneSkillImages(ctx context.Context, roots []string, o BuildOptions, dryRun bool) (pruned []images.Listed, warnings []error, err error) {
	skills, warnings := skill.Discover(roots...)
	if _, err := o.lookup(ctx, RunnerImage()); isNotFound(err) {
		return nil, warnings, fmt.Errorf("%w: runner image %s is not built, so no skill image can be told current; build it with `sandboxrun images build` first", images.ErrNotFound, RunnerImage())
	} else if err != nil {
		return nil, warnings, err
	}
	// Each skill's image is current for the runner it is built on now (a
	// profile the policy picks for it, or the runner).
	runnerIDs := map[string]string{}
	runnerID := func(ref string) (string, error) {
		if id, ok := runnerIDs[ref]; ok {
			return id, nil
		}
		id, err := o.lookup(ctx, ref)
		if err == nil {
			runnerIDs[ref] = id
		}
		return id, err
	}
	current := map[string]bool{}
	unreadable := map[string]bool{}
	for _, sk := range skills {
		opts, err := SkillImageOptions(sk, o)
		if errors.Is(err, ErrNoDependencies) {
			continue
		}
		if err == nil {
			var id, tag string
			if id, err = runnerID(opts.Runner); isNotFound(err) {
				continue // its runner profile is not built: none of its images is current
			}
			if err == nil {
				if tag, err = images.SkillTag(opts, id); err == nil {
					current[tag] = true
					continue
				}
			}
		}
		unreadable[sk.Manifest.Name] = true
		warnings = append(warnings, fmt.Errorf("keeping the images of skill %s: %w", sk.Manifest.Name, err))
	}
	keep := func(l images.Listed) bool {
		if unreadable[l.Skill] {
			return true
		}
		for _, t := range l.Tags {
			if current[t] {
				return true
			}
		}
		return false
	}
	pruned, err = images.Prune(ctx, keep, dryRun)
	return pruned, warnings, err
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
