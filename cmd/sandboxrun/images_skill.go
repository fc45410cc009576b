package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/size"
)

// listedImage is one image as `images list --json` prints it.
type listedImage struct {
	Kind           string    `json:"kind"`
	Skill          string    `json:"skill,omitempty"`
	Ref            string    `json:"ref,omitempty"`
	Tags           []string  `json:"tags,omitempty"`
	ID             string    `json:"id"`
	Hash           string    `json:"hash,omitempty"`
	Size           int64     `json:"size"`
	Created        time.Time `json:"created"`
	PythonPackages []string  `json:"python_packages,omitempty"`
	SystemPackages []string  `json:"system_packages,omitempty"`
}

func toListedImage(l images.Listed) listedImage {
	return listedImage{
		Kind: l.Kind, Skill: l.Skill, Ref: l.Ref, Tags: l.Tags, ID: l.ID, Hash: l.ContentHash,
		Size: l.Size, Created: l.Created, PythonPackages: l.PythonPackages, SystemPackages: l.SystemPackages,
	}
}

func newImagesListCmd(s streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List sandboxrun's images: runner, base and skill images",
		Long: `list shows every image labelled as sandboxrun's, with the skill it serves,
its content hash, size and age. Sizes include the layers an image shares with
the runner, as 'docker images' counts them.

HASH is the content hash a rebuild is decided on. A skill image's tag is a
different hash, of the runner image and the package lists only, so that run
finds an image built from a wheelhouse without naming the wheelhouse again.

--json prints [{kind, skill, ref, tags, id, hash, size, created,
python_packages, system_packages}]; size is in bytes, created is RFC 3339.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := backends.Images().List(cmd.Context())
			if err != nil {
				return withCode(exitEnv, err)
			}
			if asJSON {
				out := make([]listedImage, 0, len(list))
				for _, l := range list {
					out = append(out, toListedImage(l))
				}
				if err := writeJSON(s.out, out); err != nil {
					return withCode(exitEnv, err)
				}
				return nil
			}
			writeImageTable(s.out, list, time.Now())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func writeImageTable(w io.Writer, list []images.Listed, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tSKILL\tIMAGE\tHASH\tSIZE\tAGE\tPACKAGES")
	for _, l := range list {
		ref := l.Ref
		if ref == "" {
			ref = "<untagged> " + images.ShortID(l.ID)
		}
		pkgs := strings.Join(append(append([]string(nil), l.SystemPackages...), l.PythonPackages...), " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Kind, dash(l.Skill), ref, dash(images.ShortID(l.ContentHash)),
			size.Format(l.Size), humanAge(now.Sub(l.Created)), dash(pkgs))
	}
	_ = tw.Flush() // a terminal or pipe; nothing to recover
}

func newImagesPruneCmd(g *globals, s streams) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune [--dry-run]",
		Short: "Remove skill images no skill under the skills root runs in any more",
		Long: `prune removes the skill images that no skill under the skills root would run
in now: images of removed skills, of old package lists, and of an older runner
image. Runner and base images are kept. A skill whose dependencies cannot be
read keeps its images (and is reported). An image a container still uses is
not removed. The usr volumes of images the engine no longer has go too.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := g.existingRoots(); err != nil {
				return err
			}
			svc, err := g.skillService()
			if err != nil {
				return err
			}
			defer svc.Close()
			pruned, volumes, warnings, err := svc.PruneImages(cmd.Context(), dryRun)
			for _, w := range warnings {
				fmt.Fprintf(s.err, "sandboxrun: %v\n", w)
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			var total int64
			for _, p := range pruned {
				ref := p.Ref
				if ref == "" {
					ref = "<untagged> " + images.ShortID(p.ID)
				}
				fmt.Fprintf(s.out, "%s %s (skill %s, %s)\n", verb, ref, dash(p.Skill), size.Format(p.Size))
				total += p.Size
			}
			switch {
			case len(pruned) == 0 && err == nil:
				fmt.Fprintln(s.out, "no skill image to remove")
			case len(pruned) > 0:
				fmt.Fprintf(s.out, "%d skill image(s), %s (sizes include the layers shared with the runner)\n", len(pruned), size.Format(total))
			}
			printVolumes(s, volumes, dryRun)
			if err != nil {
				return withCode(exitEnv, err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed without removing it")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanAge(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
