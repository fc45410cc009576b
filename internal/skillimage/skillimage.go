package skillimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/refusal"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// ImageFor is the image a run of sk starts in when the caller names none:
// its skill image (found, or built unless o.NoBuild) when it declares
// packages, else the runner or profile.
func (e Env) ImageFor(ctx context.Context, sk *skill.Skill, o Options) (string, error) {
	opts, err := e.SkillOptions(sk, o)
	if errors.Is(err, ErrNoDependencies) {
		return e.ImageOn(ctx, sk, o, nil)
	}
	if err != nil {
		return "", err
	}
	return e.ImageOn(ctx, sk, o, &opts)
}

// ErrNeedsBuild means a skill's image is missing and building it was not
// allowed (--no-build). The message names the command that builds it.
var ErrNeedsBuild = errors.New("skill image not built")

// Env is what the images are named from, the runner image (profiles are
// tagged from it) and sandboxrun's version, and the engine they are found,
// built and pruned on.
type Env struct {
	RunnerImage string
	Version     string
	Images      *images.Client
}

// Options configure how a skill's image is found and built.
type Options struct {
	// Pip says where pip finds packages (the CLI reads PIP_INDEX_URL,
	// PIP_FIND_LINKS and PIP_TRUSTED_HOST).
	Pip images.PipConfig
	// NoCache rebuilds even when an up-to-date image exists (build only).
	NoCache bool
	// NoBuild makes a run fail with ErrNeedsBuild instead of building a
	// missing image.
	NoBuild bool
	// Progress receives the build's progress lines; nil discards them.
	Progress io.Writer
	// Runner is the image the skill runs in without packages and has its
	// image built on; default: the runner, or the profile Policy picks.
	Runner string
	// Lookup returns the ID of a local image, or an error matching
	// images.ErrNotFound or sandbox.ErrImageNotFound. Default: Env.Images's
	// Inspect; callers holding a *docker.Runner pass
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

// RunnerFor is the image sk's image is built FROM, and the one sk runs in
// when it declares no packages: o.Runner, else the runner or the profile
// the policy picks for the skill.
func (e Env) RunnerFor(sk *skill.Skill, o Options) (string, error) {
	if o.Runner != "" {
		return o.Runner, nil
	}
	ref, err := Runner(o.Policy, e.RunnerImage, sk.Manifest.Name)
	if err != nil {
		return "", refusal.Mark(err)
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
	return where.Errorf("%w: runner image %s is not built: %s", images.ErrNotFound, ref,
		where.ForOperator{Operator: "build it with " + fix, Others: "the server's operator has to build it"})
}

func (e Env) lookup(ctx context.Context, o Options, ref string) (string, error) {
	if o.Lookup != nil {
		return o.Lookup(ctx, ref)
	}
	id, _, err := e.Images.Inspect(ctx, ref)
	return id, err
}

func isNotFound(err error) bool {
	return errors.Is(err, images.ErrNotFound) || errors.Is(err, sandbox.ErrImageNotFound)
}

// SkillOptions collects a skill's dependencies, with the policy's
// grants, into the options of its image (ImageOptions); a
// malformed declaration is refused.
func (e Env) SkillOptions(sk *skill.Skill, o Options) (images.SkillOptions, error) {
	runner, err := e.RunnerFor(sk, o)
	if err != nil {
		return images.SkillOptions{}, err
	}
	opts, err := ImageOptions(sk, o.Policy, runner, BuildInputs{
		Pip: o.Pip, Progress: o.Progress, NoCache: o.NoCache, SourceBuilds: o.SourceBuilds, Version: e.Version,
	})
	if err != nil && !errors.Is(err, ErrNoDependencies) {
		return opts, refusal.Mark(err)
	}
	return opts, err
}

// ImageOn returns the image a run of sk starts in, as its plan chose:
// with opts (the skill declares packages) its skill image, found by the
// runner's id or built (unless o.NoBuild); without, o.Runner, checked to
// be built when it is a profile. The lookup of an existing image does not
// depend on o.Pip: an image built from a wheelhouse is used without naming
// the wheelhouse again.
func (e Env) ImageOn(ctx context.Context, sk *skill.Skill, o Options, opts *images.SkillOptions) (string, error) {
	if opts == nil {
		runner, err := e.RunnerFor(sk, o)
		if err != nil {
			return "", err
		}
		if runner != e.RunnerImage {
			// A profile: say how to build it, rather than the engine's
			// "no such image" at the start.
			if _, err := e.lookup(ctx, o, runner); isNotFound(err) {
				return "", runnerMissing(runner)
			} else if err != nil {
				return "", err
			}
		}
		return runner, nil
	}
	runnerID, err := e.lookup(ctx, o, opts.Runner)
	if isNotFound(err) {
		return "", runnerMissing(opts.Runner)
	}
	if err != nil {
		return "", err
	}
	tag, err := images.SkillTag(*opts, runnerID)
	if err != nil {
		return "", refusal.Mark(err)
	}
	if _, err := e.lookup(ctx, o, tag); err == nil {
		return tag, nil
	} else if !isNotFound(err) {
		return "", err
	}
	if o.NoBuild {
		// The folder, not the name: it works whatever skills root the
		// caller used.
		return "", where.Errorf("%w: skill %s needs the image %s for its packages; %s",
			ErrNeedsBuild, sk.Manifest.Name, tag, where.ForOperator{
				Operator: "build it with `sandboxrun build " + sk.Dir + "`, or run without --no-build",
				Others:   "the server builds no images (--no-build): its operator has to build it",
			})
	}
	img, err := e.Images.EnsureSkill(ctx, *opts)
	if err != nil {
		return "", err
	}
	return img.Ref, nil
}

// Build builds sk's image unless an up-to-date one exists (the
// content hash, which includes o.Pip, decides). A skill without packages
// gives ErrNoDependencies.
func (e Env) Build(ctx context.Context, sk *skill.Skill, o Options) (images.Image, error) {
	opts, err := e.SkillOptions(sk, o)
	if err != nil {
		return images.Image{}, err
	}
	if err := opts.Validate(); err != nil {
		return images.Image{}, refusal.Mark(err)
	}
	return e.Images.EnsureSkill(ctx, opts)
}

// Prune removes the skill images that no skill under the roots would
// run in now (other package lists, an older runner image), and untagged
// ones. A skill whose dependencies cannot be read keeps all its images and
// is reported in warnings, as is a folder that is not a readable skill.
func (e Env) Prune(ctx context.Context, roots []string, o Options, dryRun bool) (pruned []images.Listed, warnings []error, err error) {
	skills, warnings := skill.Discover(roots...)
	if _, err := e.lookup(ctx, o, e.RunnerImage); isNotFound(err) {
		return nil, warnings, fmt.Errorf("%w: runner image %s is not built, so no skill image can be told current; build it with `sandboxrun images build` first", images.ErrNotFound, e.RunnerImage)
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
		id, err := e.lookup(ctx, o, ref)
		if err == nil {
			runnerIDs[ref] = id
		}
		return id, err
	}
	current := map[string]bool{}
	unreadable := map[string]bool{}
	for _, sk := range skills {
		opts, err := e.SkillOptions(sk, o)
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
	pruned, err = e.Images.Prune(ctx, keep, dryRun)
	return pruned, warnings, err
}
