package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/policy"
)

// LabelProfile names the runner profile an image is, on profile images.
const LabelProfile = layout.LabelProfile

// profilePackages are the Debian packages (bookworm) each runner profile
// adds to the runner. The document skills people publish import pypdf,
// openpyxl, python-docx, pandas, PyYAML, Pillow and reportlab and call
// pdftotext, pdftoppm and qpdf. pdfplumber and python-pptx are not
// packaged by Debian; a skill that needs them declares them.
var profilePackages = map[string][]string{
	policy.ProfileDocuments: documentPackages,
	policy.ProfileOffice:    append(append([]string(nil), documentPackages...), "libreoffice-nogui", "fonts-dejavu-core"),
}

var documentPackages = []string{
	"python3-pypdf", "python3-openpyxl", "python3-docx", "python3-pandas", "python3-yaml",
	"python3-pil", "python3-reportlab", "poppler-utils", "qpdf",
}

// ProfilePackages returns the Debian packages profile adds to the runner.
func ProfilePackages(profile string) ([]string, error) {
	if err := policy.CheckProfile(profile); err != nil || profile == "" {
		if err == nil {
			err = fmt.Errorf("%w: the plain runner is no profile", policy.ErrUnknownProfile)
		}
		return nil, err
	}
	return append([]string(nil), profilePackages[profile]...), nil
}

// ProfileRef is the reference of a profile's image: the runner's tag with
// "-<profile>" appended, so every runner (a version, a private name set in
// $SANDBOXRUN_RUNNER_IMAGE) has its own profiles next to it. profile "" is
// the runner itself. A runner named by digest has no tag to extend.
func ProfileRef(runner, profile string) (string, error) {
	if profile == "" {
		return runner, nil
	}
	if err := policy.CheckProfile(profile); err != nil {
		return "", err
	}
	if strings.Contains(runner, "@") {
		return "", fmt.Errorf("runner profiles need a runner image named by tag, not by digest (%s): set %s to a repo:tag", runner, "SANDBOXRUN_RUNNER_IMAGE")
	}
	repo, tag := runner, "latest"
	if i := strings.LastIndex(runner, ":"); i > strings.LastIndex(runner, "/") {
		repo, tag = runner[:i], runner[i+1:]
	}
	return repo + ":" + tag + "-" + profile, nil
}

// ProfileOptions say which profile image to build.
type ProfileOptions struct {
	// Runner is the runner image the profile is built FROM. Required.
	Runner string
	// Profile is the profile's name. Required.
	Profile string
	// Version goes into the image's version label.
	Version string
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
	// Force rebuilds even when an up-to-date image exists (fresh Debian
	// packages).
	Force bool
}

// BuildProfile builds the profile image FROM the runner (which must exist),
// unless one with the same content hash, the runner's ID and the package
// list, is already tagged. apt runs as root in the build and the image
// ends as the runner does: uid 65532, no set-id programs, no apt lists.
func (c *Client) BuildProfile(ctx context.Context, o ProfileOptions) (Image, error) {
	pkgs, err := ProfilePackages(o.Profile)
	if err != nil {
		return Image{}, err
	}
	ref, err := ProfileRef(o.Runner, o.Profile)
	if err != nil {
		return Image{}, err
	}
	rep := newReporter(o.Progress, nil)
	if err := c.checkDocker(ctx); err != nil {
		return Image{}, err
	}
	runnerID, err := c.runnerImageID(ctx, o.Runner)
	if err != nil {
		return Image{}, err
	}
	hash := contentHash("profile", []byte(runnerID), []byte(o.Profile), []byte(strings.Join(pkgs, "\n")))
	existing, err := c.inspectImage(ctx, ref)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Image{}, err
	}
	if err == nil && existing.Labels[LabelContentHash] == hash && !o.Force {
		rep.stepf("%s is up to date (%s); nothing to build", ref, ShortID(existing.ID))
		return Image{Ref: ref, ID: existing.ID, ContentHash: hash}, nil
	}
	started := time.Now()
	rep.stepf("building %s FROM %s (%s): apt installs %s", ref, o.Runner, ShortID(runnerID), strings.Join(pkgs, ", "))
	id, err := c.buildImage(ctx, buildRequest{
		tag:        ref,
		dockerfile: profileDockerfile(pkgs),
		buildArgs:  map[string]string{"RUNNER": o.Runner},
		labels:     profileLabels(o, ref, runnerID, hash, time.Now()),
		baseID:     runnerID,
	}, rep)
	if err != nil {
		return Image{}, fmt.Errorf("%w (the profile's packages come from the Debian archive in the runner's apt sources; check the Docker host's network)", err)
	}
	if existing.ID != "" && existing.ID != id {
		if err := c.removeIfUntagged(ctx, existing.ID); err != nil {
			rep.stepf("note: could not remove the previous %s image %s: %v", ref, ShortID(existing.ID), err)
		}
	}
	added := ""
	if info, err := c.inspectImage(ctx, id); err == nil {
		if runner, err := c.inspectImage(ctx, runnerID); err == nil && info.Size >= runner.Size {
			added = fmt.Sprintf("; %s, %s more than the runner", size.Format(info.Size), size.Format(info.Size-runner.Size))
		}
	}
	rep.stepf("built %s (%s) in %s%s", ref, ShortID(id), rep.since(started), added)
	return Image{Ref: ref, ID: id, ContentHash: hash, Built: true}, nil
}

// profileDockerfile installs pkgs on the runner. The set-id sweep and the
// user are the runner's own (Dockerfile.runner): a profile adds programs,
// never privileges.
func profileDockerfile(pkgs []string) []byte {
	return []byte(`# A sandboxrun runner profile: the runner plus Debian packages.
ARG RUNNER
FROM ${RUNNER}
USER 0:0
RUN set -eu; \
    apt-get update -q; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ` + quoteAll(pkgs) + `; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin /root/.cache; \
    find / -xdev -type f -perm /6000 -exec chmod ug-s {} +
USER ` + buildUser + `
WORKDIR ` + layout.WorkspaceDir + `
`)
}

func profileLabels(o ProfileOptions, ref, runnerID, hash string, created time.Time) map[string]string {
	return map[string]string{
		ocispec.AnnotationTitle:         "sandboxrun runner, " + o.Profile + " profile",
		ocispec.AnnotationDescription:   "The sandboxrun runner with Debian packages for the " + o.Profile + " profile",
		ocispec.AnnotationVersion:       o.Version,
		ocispec.AnnotationCreated:       created.UTC().Format(time.RFC3339),
		ocispec.AnnotationBaseImageName: o.Runner,
		LabelBaseID:                     runnerID,
		LabelManaged:                    "true",
		LabelKind:                       KindRunner,
		LabelProfile:                    o.Profile,
		LabelContentHash:                hash,
	}
}
