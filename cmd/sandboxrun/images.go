package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
)

func newImagesCmd(g *globals, s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build, list and prune the images sandboxes run in",
		Long: `images manages the images sandboxes run in: the runner image every sandbox
starts from, the Debian base it is built on when no registry is reachable, and
the per-skill images of skills that declare packages (see 'sandboxrun build').`,
	}
	cmd.AddCommand(newImagesBuildCmd(g, s), newImagesListCmd(s), newImagesPruneCmd(g, s), newImagesUnpackCmd(g, s))
	return cmd
}

func newImagesBuildCmd(g *globals, s streams) *cobra.Command {
	var initPath, base, profile string
	var force bool
	cmd := &cobra.Command{
		Use:   "build [--init PATH] [--base IMAGE] [--profile NAME] [--force]",
		Short: "Build the runner image " + sandboxrun.RunnerImage(),
		Long: `build creates the runner image every sandbox runs: Debian with python3, node,
bash, jq, git and sandbox-init as PID 1.

The Debian base comes from a registry when one is reachable (--base). When none
is (air-gapped hosts, CI without a registry) it is bootstrapped with debootstrap
from this host's own apt sources and loaded with 'docker import'; that needs
root the first time. A build whose inputs did not change is skipped, so running
this again is cheap.

--profile builds, after the runner, a runner profile: the runner plus Debian
packages, tagged <runner>-<profile>. documents adds python3-pypdf, -openpyxl,
-docx, -pandas, -yaml, -pil, -reportlab, poppler-utils and qpdf, so the
published document skills run without declaring packages; office adds
LibreOffice (headless) to that. The operator policy picks the profile sandboxes
run in (profile: documents, or skills.<name>.profile). Building a profile needs
the Debian archive (the runner's apt sources).

On an engine whose storage driver is fuse-overlayfs, each image built also gets
its usr volume: a read-only copy of its /usr that sandboxes mount, so that an
interpreter's files are not each read through the driver's user-space process
(policy docker.usr_volumes: false turns this off). Otherwise the first run of
the image makes it.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := policy.CheckProfile(profile); err != nil {
				return usageError("--profile: %v", err)
			}
			if initPath == "" {
				var err error
				if initPath, err = findInit(); err != nil {
					return withCode(exitEnv, err)
				}
			}
			svc, err := g.skillService()
			if err != nil {
				return err
			}
			defer svc.Close()
			start := time.Now()
			img, err := svc.BuildRunnerImage(cmd.Context(), images.RunnerOptions{
				InitBinary: initPath,
				Base:       base,
				Progress:   s.err,
				Force:      force,
			})
			if err != nil {
				return withCode(exitEnv, err)
			}
			reportImage(s, img, start)
			prepareUsr(cmd.Context(), svc, s, img.Ref)
			if profile == "" {
				return nil
			}
			start = time.Now()
			img, err = svc.BuildProfileImage(cmd.Context(), images.ProfileOptions{
				Profile:  profile,
				Progress: s.err,
				Force:    force,
			})
			if err != nil {
				return withCode(exitEnv, err)
			}
			reportImage(s, img, start)
			prepareUsr(cmd.Context(), svc, s, img.Ref)
			return nil
		},
	}
	cmd.Flags().StringVar(&initPath, "init", "", "static sandbox-init binary to bake in (default: sandbox-init next to this executable)")
	cmd.Flags().StringVar(&base, "base", images.DefaultBase, "registry base image tried before bootstrapping one")
	cmd.Flags().BoolVar(&force, "force", false, "rebuild even when nothing changed")
	cmd.Flags().StringVar(&profile, "profile", "", "also build this runner profile: "+strings.Join(policy.RunnerProfiles(), ", "))
	return cmd
}

// reportImage prints one built (or up-to-date) image.
func reportImage(s streams, img images.Image, start time.Time) {
	state := "built"
	if !img.Built {
		state = "up to date"
	}
	fmt.Fprintf(s.out, "%s %s (%s) in %s\n", img.Ref, state, shortID(img.ID), time.Since(start).Round(time.Millisecond))
}

// findInit looks for sandbox-init next to the running executable, where
// `make build` puts it.
func findInit() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate sandbox-init: %w", err)
	}
	p := filepath.Join(filepath.Dir(exe), "sandbox-init")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no sandbox-init next to %s: build it with 'make build' or pass --init PATH", exe)
	}
	return p, nil
}

func shortID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}

// prepareUsr fills the usr volume of a freshly built image (what the
// backend keeps beside it; a Kubernetes backend keeps none), so that its
// first run does not wait for the copy. A failure is not the build's: runs
// make the copy themselves, or read /usr through the storage driver.
func prepareUsr(ctx context.Context, svc *sandboxrun.Service, s streams, ref string) {
	start := time.Now()
	vol, err := svc.PrepareImage(ctx, ref)
	if err == nil && vol != "" {
		fmt.Fprintf(s.err, "%s usr volume %s ready in %s\n", ref, vol, time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		fmt.Fprintf(s.err, "warning: %s has no usr volume yet (its first run makes one): %v\n", ref, err)
	}
}
