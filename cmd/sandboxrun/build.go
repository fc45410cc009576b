package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/skill"
)

// pipFlags are the package-source flags of build; unset ones fall back to
// pip's own environment variables.
type pipFlags struct {
	findLinks    []string
	indexURL     string
	trustedHosts []string
}

func (f *pipFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.findLinks, "find-links", nil, "folder of wheels (or http(s) URL) for pip; alone, it is the only source (repeatable; default $PIP_FIND_LINKS)")
	fs.StringVar(&f.indexURL, "index-url", "", "package index replacing PyPI (default $PIP_INDEX_URL)")
	fs.StringArrayVar(&f.trustedHosts, "trusted-host", nil, "host pip may reach without verified HTTPS (repeatable; default $PIP_TRUSTED_HOST)")
}

// config merges the flags over the environment, field by field.
func (f *pipFlags) config() images.PipConfig {
	c := pipConfigFromEnv(os.Getenv)
	if len(f.findLinks) > 0 {
		c.FindLinks = f.findLinks
	}
	if f.indexURL != "" {
		c.IndexURL = f.indexURL
	}
	if len(f.trustedHosts) > 0 {
		c.TrustedHosts = f.trustedHosts
	}
	return c
}

func newBuildCmd(g *globals, s streams) *cobra.Command {
	var pip pipFlags
	var all, noCache, sourceBuilds bool
	cmd := &cobra.Command{
		Use:   "build [SKILL...|--all] [--find-links DIR] [--index-url URL] [--no-cache] [--allow-source-builds]",
		Short: "Build the images of skills that declare packages",
		Long: `build makes the image a skill with dependencies runs in:
sandboxrun/skill-<name>:<hash>, built FROM the runner image. apt installs the
skill's system_packages; a virtual environment at ` + images.VenvPath + ` (which sees
Debian's python3-* packages) gets its python_packages and the PEP 723
dependencies of its scripts.

An image is rebuilt only when the runner image, the package lists or the
package sources change; editing a script never rebuilds. run, exec and python
build a missing image themselves; build does it ahead of time (CI, air-gapped
hosts). Package sources apply while building only and are never stored in the
image: --find-links (a local wheelhouse, copied into the build), --index-url,
--trusted-host, or PIP_FIND_LINKS / PIP_INDEX_URL / PIP_TRUSTED_HOST.

Exit status: 0 when every image is built or up to date; 2 when a skill's
dependencies cannot be read (malformed PEP 723 block, bad package name); 3 when
a build failed (unknown package, version that does not resolve, no network).`,
		Example: `  sandboxrun build csv-report
  sandboxrun build --all --find-links ./wheels
  PIP_INDEX_URL=https://pypi.example.com/simple sandboxrun build --no-cache csv-report`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usageError("build takes SKILL names or --all (not both); see 'sandboxrun build --help'")
			}
			skills, err := skillsToBuild(g, s, args, all)
			if err != nil {
				return err
			}
			svc, err := g.skillService()
			if err != nil {
				return err
			}
			opts := sandboxrun.BuildOptions{Pip: pip.config(), NoCache: noCache, Progress: s.err, SourceBuilds: sourceBuilds}
			var errs []error
			withDeps := 0
			for _, sk := range skills {
				hasDeps, err := buildOne(cmd, g, s, svc, sk, opts)
				if hasDeps {
					withDeps++
				}
				if err == nil {
					continue
				}
				if len(skills) == 1 || errors.Is(err, images.ErrNoDocker) {
					// Without Docker every other build would fail the same way.
					return err
				}
				fmt.Fprintf(s.err, "sandboxrun: %s: %v\n", sk.Manifest.Name, err)
				errs = append(errs, err)
			}
			if len(errs) > 0 {
				return withCode(classify(errs[0]), fmt.Errorf("%d of %d skill images failed to build", len(errs), withDeps))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "build every skill under the skills root that declares packages")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "rebuild even when an up-to-date image exists")
	cmd.Flags().BoolVar(&sourceBuilds, "allow-source-builds", false, "let pip build packages that have no wheel, running their build code as uid 65532 without capabilities (default: wheels only, so no package code runs while building; policy: build.source_builds)")
	pip.register(cmd.Flags())
	return cmd
}

func skillsToBuild(g *globals, s streams, refs []string, all bool) ([]*skill.Skill, error) {
	if !all {
		skills := make([]*skill.Skill, 0, len(refs))
		for _, ref := range refs {
			sk, err := loadSkill(g, ref)
			if err != nil {
				return nil, err
			}
			skills = append(skills, sk)
		}
		return skills, nil
	}
	roots, err := g.existingRoots()
	if err != nil {
		return nil, err
	}
	return discoverSkills(g, s, roots), nil
}

// buildOne builds sk's image; hasDeps is false for a skill that declares no
// packages and so has no image of its own.
func buildOne(cmd *cobra.Command, g *globals, s streams, svc *sandboxrun.Service, sk *skill.Skill, opts sandboxrun.BuildOptions) (hasDeps bool, err error) {
	start := time.Now()
	img, err := svc.BuildImage(cmd.Context(), sk.Dir, opts)
	switch {
	case errors.Is(err, sandboxrun.ErrNoDependencies):
		fmt.Fprintf(s.out, "%s: declares no packages; runs in %s\n", sk.Manifest.Name, sandboxrun.RunnerImage())
		return false, nil
	case err != nil:
		return true, err
	}
	state := "built"
	if !img.Built {
		state = "up to date"
	}
	fmt.Fprintf(s.out, "%s: %s %s (%s) in %s\n", sk.Manifest.Name, img.Ref, state, images.ShortID(img.ID), time.Since(start).Round(time.Millisecond))
	prepareUsr(cmd.Context(), svc, s, img.Ref)
	return true, nil
}
