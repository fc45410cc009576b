package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Skill images. A skill that declares packages runs in its own image,
// sandboxrun/skill-<name>:<tag>, built FROM the runner: apt installs its
// system packages and a virtual environment at VenvPath (created with the
// system site packages, so Debian's python3-* packages import) gets its
// Python packages. The skill's files are not in the image; they stay a
// read-only mount, so editing a script never forces a rebuild.
//
// Two hashes identify a skill image. The tag comes from the deps hash: the
// skill's name, the runner image ID and the package lists. The
// io.sandboxrun.content-hash label adds the pip configuration (index URL,
// trusted hosts, the content of every --find-links folder). `run` finds the
// image by tag alone, so an image built from a wheelhouse is used without
// naming the wheelhouse again; `build` rebuilds when the content hash
// differs, so a changed package source does take effect.

// KindSkill is the io.sandboxrun.kind of skill images.
const KindSkill = "skill"

// Labels only skill images carry.
const (
	LabelSkill    = layout.LabelSkill
	LabelDepsHash = layout.LabelDepsHash
	// LabelPython and LabelSystem list the installed packages, for
	// `sandboxrun images list` and for people reading `docker inspect`.
	LabelPython = layout.LabelPython
	LabelSystem = layout.LabelSystem
)

// VenvPath is the virtual environment of every skill image with Python
// packages. The sandbox puts its bin/ first on PATH, so python3 there is the
// environment's interpreter.
const VenvPath = layout.VenvDir

// SkillRepoPrefix starts the repository name of every skill image.
const SkillRepoPrefix = layout.SkillRepoPrefix

// ErrSkillBuild means a skill image could not be built; errors.As with
// *SkillBuildError gives the failed step and the package manager's output.
var ErrSkillBuild = errors.New("building the skill image failed")

// PipConfig says where pip looks for packages while a skill image is built.
// None of it is stored in the image: it reaches the build container in a
// script that is deleted before the image is committed.
type PipConfig struct {
	// IndexURL replaces PyPI (pip --index-url). It may carry credentials;
	// progress and errors show it with the password masked.
	IndexURL string
	// FindLinks are folders of wheels and sdists on this host (copied into
	// the build container, not into the image) or http(s) URLs of such
	// listings. Given without IndexURL they are the only source (pip
	// --no-index): an air-gapped build must not wait for PyPI.
	FindLinks []string
	// TrustedHosts may be reached over plain HTTP or with a certificate
	// pip cannot verify (pip --trusted-host), as host or host:port.
	TrustedHosts []string
}

// SkillOptions describe one skill image.
type SkillOptions struct {
	// Skill is the skill's name. Required.
	Skill string
	// Runner is the runner image to build FROM, e.g. sandboxrun/runner:0.1.0.
	// Required.
	Runner string
	// PythonPackages are pip requirements and SystemPackages Debian package
	// names; skill.(*Skill).Dependencies gives both. Order and spelling do
	// not matter: they are canonicalised and sorted before hashing.
	PythonPackages []string
	SystemPackages []string
	// RequiresPython are PEP 723 requires-python specifiers the runner's
	// Python must satisfy; they are checked while building.
	RequiresPython []string
	// Pip configures the package sources.
	Pip PipConfig
	// Version fills org.opencontainers.image.version (sandboxrun's version).
	Version string
	// Progress receives human-readable progress lines; nil discards them.
	Progress io.Writer
	// NoCache rebuilds even when an image with the same content hash exists.
	NoCache bool
	// SourceBuilds lets pip build packages that have no wheel, running
	// their build code as an unprivileged user without capabilities. Off,
	// pip installs wheels only (--only-binary :all:), so no package code
	// runs while building. Source builds and an index URL carrying
	// credentials are refused together: the package's build code runs
	// beside pip and could read them.
	SourceBuilds bool
}

// Validate checks the options before anything is run: names that could
// read as options or shell syntax, package sources that are not URLs or
// folders.
func (o SkillOptions) Validate() error {
	_, err := o.normalized()
	return err
}

// normalized checks and canonicalises the options. It returns a copy with
// sorted, deduplicated package lists and absolute find-links folders.
func (o SkillOptions) normalized() (SkillOptions, error) {
	if strings.TrimSpace(o.Skill) == "" || strings.ContainsAny(o.Skill, "\x00\n\r/") {
		return o, fmt.Errorf("skill name %q cannot name an image: pass the skill's manifest name", o.Skill)
	}
	if err := validateRef(o.Runner); err != nil {
		return o, fmt.Errorf("runner image: %w", err)
	}
	py := make([]string, 0, len(o.PythonPackages))
	for _, p := range o.PythonPackages {
		c, err := skill.CanonicalRequirement(p)
		if err != nil {
			return o, err
		}
		py = append(py, c)
	}
	for _, p := range o.SystemPackages {
		if err := skill.CheckSystemPackage(p); err != nil {
			return o, err
		}
	}
	for _, s := range o.RequiresPython {
		if !requiresPythonRe.MatchString(s) {
			return o, fmt.Errorf("requires-python %q is not a version specifier such as \">=3.10\"", s)
		}
	}
	pip, err := o.Pip.normalized()
	if err != nil {
		return o, err
	}
	if o.SourceBuilds && urlHasCredentials(pip.IndexURL) {
		return o, fmt.Errorf("source builds are allowed but the index URL %s carries credentials, which a package's build code could read; serve wheels from --find-links, or use an index without credentials", redactURL(pip.IndexURL))
	}
	o.PythonPackages = sortedUnique(py)
	o.SystemPackages = sortedUnique(o.SystemPackages)
	o.RequiresPython = sortedUnique(o.RequiresPython)
	o.Pip = pip
	return o, nil
}

var (
	requiresPythonRe = regexp.MustCompile(`^[0-9A-Za-z.*+!<>=~, ]+$`)
	trustedHostRe    = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$`)
)

func (p PipConfig) normalized() (PipConfig, error) {
	if p.IndexURL != "" {
		if err := checkSourceURL(p.IndexURL); err != nil {
			return p, fmt.Errorf("--index-url: %w", err)
		}
	}
	links := make([]string, 0, len(p.FindLinks))
	for _, l := range p.FindLinks {
		if isURL(l) {
			if err := checkSourceURL(l); err != nil {
				return p, fmt.Errorf("--find-links: %w", err)
			}
			links = append(links, l)
			continue
		}
		abs, err := filepath.Abs(l)
		if err != nil {
			return p, where.Errorf("--find-links %s: %w", where.Path(l), err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return p, where.Errorf("--find-links %s: %w: pass a folder of .whl/.tar.gz files or an http(s) URL", where.Path(l), err)
		}
		if !fi.IsDir() {
			return p, where.Errorf("--find-links %s: not a folder: pass a folder of .whl/.tar.gz files or an http(s) URL", where.Path(l))
		}
		links = append(links, abs)
	}
	for _, h := range p.TrustedHosts {
		if !trustedHostRe.MatchString(h) {
			return p, fmt.Errorf("--trusted-host %q is not a host or host:port", h)
		}
	}
	// Find-links order is pip's search order, so it is kept.
	p.FindLinks = slices.Compact(links)
	p.TrustedHosts = sortedUnique(p.TrustedHosts)
	return p, nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// checkSourceURL accepts an absolute http(s) URL without whitespace or
// control characters; anything else is not a package index.
func checkSourceURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("%q is not an http(s) URL such as https://pypi.example.com/simple", redactURL(s))
	}
	return nil
}

// redactURL masks a password in u for progress and error messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

func sortedUnique(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// SkillTag returns the image reference a skill's dependencies get on top of
// the runner image with ID runnerID, without any Docker call: the cheap
// lookup `run` makes before each execution.
func SkillTag(o SkillOptions, runnerID string) (string, error) {
	// The tag does not depend on the package sources, so a source that is
	// unusable now (a wheelhouse that moved) must not hide a built image.
	o.Pip = PipConfig{}
	n, err := o.normalized()
	if err != nil {
		return "", err
	}
	return skillRef(n.Skill, depsHash(n, runnerID)), nil
}

// SkillRef resolves the runner image and returns the skill image's
// reference and content hash, which covers the pip configuration too
// (including what the --find-links folders hold). Nothing is built.
func (c *Client) SkillRef(ctx context.Context, o SkillOptions) (ref, hash string, err error) {
	n, err := o.normalized()
	if err != nil {
		return "", "", err
	}
	runnerID, err := c.runnerImageID(ctx, n.Runner)
	if err != nil {
		return "", "", err
	}
	p, err := planSkill(n, runnerID)
	if err != nil {
		return "", "", err
	}
	return p.ref, p.contentHash, nil
}

// runnerImageID finds the runner image; a missing one is an error matching
// ErrNotFound that says how to build it.
func (c *Client) runnerImageID(ctx context.Context, ref string) (string, error) {
	info, err := c.inspectImage(ctx, ref)
	if errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("runner image %s: %w: build it first with `sandboxrun images build` (or `make images`)", ref, ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	return info.ID, nil
}

// EnsureSkill returns the skill image for o, building it when no image with
// the same content hash exists (or when o.NoCache is set). Concurrent calls
// for one image, in this process or in others on this host, build it once:
// the others wait and then find it.
func (c *Client) EnsureSkill(ctx context.Context, o SkillOptions) (Image, error) {
	n, err := o.normalized()
	if err != nil {
		return Image{}, err
	}
	if len(n.PythonPackages) == 0 && len(n.SystemPackages) == 0 {
		return Image{}, fmt.Errorf("skill %s declares no packages: it runs in the runner image %s and needs no image of its own", n.Skill, n.Runner)
	}
	rep := newReporter(n.Progress, nil)
	if err := c.checkDocker(ctx); err != nil {
		return Image{}, err
	}
	runnerID, err := c.runnerImageID(ctx, n.Runner)
	if err != nil {
		return Image{}, err
	}
	p, err := planSkill(n, runnerID)
	if err != nil {
		return Image{}, err
	}
	if img, ok, err := c.upToDate(ctx, p); err != nil || ok {
		if ok {
			rep.stepf("%s is up to date (%s); nothing to build", p.ref, ShortID(img.ID))
		}
		return img, err
	}
	key := p.ref + "\x00" + p.contentHash + "\x00" + fmt.Sprint(n.NoCache)
	return buildOnce(ctx, key, func(ctx context.Context) (Image, error) {
		unlock, err := lockBuild(ctx, p.ref, rep)
		if err != nil {
			return Image{}, err
		}
		defer unlock()
		if !n.NoCache {
			// Another process may have built it while we waited.
			if img, ok, err := c.upToDate(ctx, p); err != nil || ok {
				if ok {
					rep.stepf("%s was built meanwhile by another process (%s)", p.ref, ShortID(img.ID))
				}
				return img, err
			}
		}
		return c.buildSkill(ctx, p, rep)
	})
}

// upToDate reports whether p.ref exists with p's content hash; with
// NoCache nothing is up to date.
func (c *Client) upToDate(ctx context.Context, p skillPlan) (Image, bool, error) {
	if p.opts.NoCache {
		return Image{}, false, nil
	}
	info, err := c.inspectImage(ctx, p.ref)
	if errors.Is(err, ErrNotFound) {
		return Image{}, false, nil
	}
	if err != nil {
		return Image{}, false, err
	}
	if info.Labels[LabelContentHash] != p.contentHash {
		return Image{}, false, nil
	}
	return Image{Ref: p.ref, ID: info.ID, ContentHash: p.contentHash}, true, nil
}

// SkillBuildError reports a failed skill image build: which step, what it
// was installing, and the end of the package manager's output, which names
// the package it could not find or the version it could not resolve. It
// matches ErrSkillBuild.
type SkillBuildError struct {
	Skill string
	Ref   string
	// Step says what failed, e.g. "installing Python packages with pip".
	Step string
	// StepName is the failed step's short name ("pip install", "apt-get
	// install", …); empty when the build script had not started.
	StepName string
	// ExitCode is the step's exit status when it exited by itself, else 0.
	ExitCode int
	// Output is the last lines the failing step printed.
	Output string
	// Hint says how to fix it, when there is a usual fix.
	Hint string
	Err  error
}

func (e *SkillBuildError) Error() string {
	msg := fmt.Sprintf("%v for skill %s (%s): %s: %v", ErrSkillBuild, e.Skill, e.Ref, e.Step, e.Err)
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += "\noutput (last lines):\n" + indentLines(out, "  ")
	}
	if e.Hint != "" {
		msg += "\nfix: " + e.Hint
	}
	return msg
}

// Unwrap exposes the sentinel and the cause.
func (e *SkillBuildError) Unwrap() []error { return []error{ErrSkillBuild, e.Err} }

func indentLines(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// skillImageTime is when a skill image was made, for its created label;
// a variable so tests can pin it.
var skillImageTime = time.Now

// urlHasCredentials reports whether an index URL carries a user or password.
func urlHasCredentials(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.User != nil
}
