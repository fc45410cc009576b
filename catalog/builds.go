package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

// What an uploaded skill may have built: an upload that declares packages
// needs an image of its own, built on the server. That is off unless the
// policy's skill_uploads.builds.allow is true; then each build is bounded
// in time (skill_uploads.builds.timeout) and in builds one token runs at
// once (skill_uploads.builds.max_concurrent_per_token).
var (
	// ErrUploadBuildsOff: an uploaded skill declares packages, and the
	// policy builds no images for uploads. A refusal (the Service's
	// ErrRefused): HTTP 403.
	ErrUploadBuildsOff = errors.New("image builds for uploaded skills are off")
	// ErrUploadBuild: an uploaded skill's image cannot be built from what
	// it declares (a package the server's sources do not have), or its
	// build ran past skill_uploads.builds.timeout. The skill's problem,
	// not the server's: HTTP 422.
	ErrUploadBuild = errors.New("the uploaded skill's image cannot be built")
	// ErrUploadBuildsBusy: the caller's token has as many image builds
	// running as skill_uploads.builds.max_concurrent_per_token: HTTP 429.
	ErrUploadBuildsBusy = errors.New("too many image builds running for this token")
)

// packageCheck is the store's check of an upload that declares packages
// (skillstore.WithPackageCheck): refused unless the policy builds images
// for uploads.
func packageCheck(pol *policy.Operator) func(name string, deps skill.Deps) error {
	return func(name string, deps skill.Deps) error {
		if pol.SkillUploads.Builds.Allow.Value {
			return nil
		}
		return buildsOff(name, deps.Python, deps.System)
	}
}

func buildsOff(name string, python, system []string) error {
	return refused(fmt.Errorf("%w: skill %s declares packages (%s), which need an image built on the server, and this server builds none for uploaded skills: "+
		"run it without packages, or ask the operator to allow builds (%s: true in the policy)",
		ErrUploadBuildsOff, name, declared(python, system), policy.UploadBuildsKey))
}

// declared lists a skill's packages for a message.
func declared(python, system []string) string {
	var parts []string
	if len(python) > 0 {
		parts = append(parts, "Python: "+strings.Join(python, ", "))
	}
	if len(system) > 0 {
		parts = append(parts, "Debian: "+strings.Join(system, ", "))
	}
	return strings.Join(parts, "; ")
}

// UploadImage is the image a run of an uploaded skill that declares
// packages starts in (opts, the plan's): found on env, or built within the
// policy's bounds, at most skill_uploads.builds.max_concurrent_per_token
// of owner's at once.
func (c *Catalog) UploadImage(ctx context.Context, env skillimage.Env, owner string, sk *skill.Skill, o skillimage.Options, opts *images.SkillOptions) (string, error) {
	name := sk.Manifest.Name
	b := c.cfg.Policy.SkillUploads.Builds
	if !b.Allow.Value {
		// Checked at upload too; this is a stored upload the policy has
		// since stopped building for.
		return "", buildsOff(name, opts.PythonPackages, opts.SystemPackages)
	}
	lookup := o
	lookup.NoBuild = true
	image, err := env.ImageOn(ctx, sk, lookup, opts)
	if !errors.Is(err, skillimage.ErrNeedsBuild) {
		return image, err
	}
	if o.NoBuild {
		return "", fmt.Errorf("%w: the image of uploaded skill %s is not built yet; run it without no-build to have it built", skillimage.ErrNeedsBuild, name)
	}
	release, err := c.builds.take(owner, int(b.MaxConcurrentPerToken.Value))
	if err != nil {
		return "", err
	}
	defer release()
	timeout := time.Duration(b.Timeout.Value)
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	image, err = env.ImageOn(bctx, sk, o, opts)
	if err == nil {
		return image, nil
	}
	if ctx.Err() == nil && errors.Is(bctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("%w: building the image of skill %s took longer than %s allows (%v): declare fewer packages, or ask the operator to raise it",
			ErrUploadBuild, name, policy.UploadBuildsTimeoutKey, policy.Duration(timeout))
	}
	return "", uploadBuildFailed(name, opts, err)
}

// uploadBuildFailed is a failed build of an upload's image as its owner
// is told it: what the skill declared and the package manager's last
// lines (from inside the build container), never the server's folders or
// package sources. A declaration no source can satisfy is the skill's
// problem (ErrUploadBuild); anything else is the server's.
func uploadBuildFailed(name string, opts *images.SkillOptions, err error) error {
	var be *images.SkillBuildError
	if !errors.As(err, &be) {
		return err
	}
	out := ""
	if tail := lastLines(be.Output, 5); tail != "" {
		out = "; its output ended: " + tail
	}
	if be.ByDeclaration() {
		return fmt.Errorf("%w: skill %s declares packages (%s) the server's build could not install: its %s step exited with status %d%s; %s, or ask the operator",
			ErrUploadBuild, name, declared(opts.PythonPackages, opts.SystemPackages), be.StepName, be.ExitCode, out, fixFor(be.StepName, opts))
	}
	step := be.StepName
	if step == "" {
		step = "the start"
	}
	return fmt.Errorf("%w: building the image of uploaded skill %s failed at %s: %w%s", images.ErrSkillBuild, name, step, be.Err, out)
}

// fixFor says how the owner fixes a declaration the step failed on,
// naming the server's package sources by what they are rather than where:
// the operator's folders and index stay the operator's.
func fixFor(step string, o *images.SkillOptions) string {
	switch step {
	case "apt-get install":
		return "declare only packages the runner's Debian release has"
	case "requires-python":
		return "relax requires-python to what the runner's Python meets"
	}
	src := "PyPI"
	switch {
	case o.Pip.IndexURL != "":
		src = "the operator's package index"
	case len(o.Pip.FindLinks) > 0:
		src = "the server's wheel folder"
	}
	if o.SourceBuilds {
		return "declare only packages " + src + " has"
	}
	return "declare only packages " + src + " has as wheels (builds take no source archives)"
}

// lastLines is at most n trailing non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, " | ")
}

// buildSlots count the image builds each owner has running.
type buildSlots struct {
	mu      sync.Mutex
	running map[string]int
}

// take holds one of owner's max builds until release is called, or
// returns ErrUploadBuildsBusy.
func (b *buildSlots) take(owner string, max int) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running[owner] >= max {
		return nil, fmt.Errorf("%w: %d running, the most %s allows; try again when one has finished", ErrUploadBuildsBusy, b.running[owner], policy.UploadBuildsConcurrencyKey)
	}
	if b.running == nil {
		b.running = map[string]int{}
	}
	b.running[owner]++
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.running[owner]--; b.running[owner] == 0 {
			delete(b.running, owner)
		}
	}, nil
}
