package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func newReapCmd(g *globals, s streams) *cobra.Command {
	var dryRun bool
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "reap [--dry-run] [--older-than DURATION]",
		Short: "Remove sandbox containers left behind by crashed sandboxrun processes",
		Long: `reap finds containers labelled io.sandboxrun.managed=true whose owner process
on this host is gone and removes them. With --older-than it also removes any
sandbox older than DURATION, whoever owns it: keep DURATION above your longest
timeout. It also removes the egress proxy folders (sandboxrun-egress-* in
$TMPDIR) of owners that are gone, and the usr volumes (read-only copies of
an image's /usr that sandboxes mount on fuse-overlayfs engines) of images
the engine no longer has. run, exec, python and serve reap dead owners'
containers and folders at start.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := g.skillService()
			if err != nil {
				return err
			}
			defer svc.Close()
			// The policy's backend: a Kubernetes policy reaps its pods.
			out, err := svc.Reap(cmd.Context(), sandbox.ReapOptions{DryRun: dryRun, Grace: olderThan})
			reaped, dirs := out.Sandboxes, out.EgressFolders
			containers, volumes := splitReaped(reaped)
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			if len(containers) > 0 {
				fmt.Fprintln(tw, "CONTAINER\tRUN ID\tSKILL\tAGE\tREASON\tREMOVED")
			}
			for _, r := range containers {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\n", images.ShortID(r.ID), r.RunID, r.Skill, r.Age.Round(time.Second), r.Reason, r.Removed)
			}
			if ferr := tw.Flush(); ferr != nil {
				return ferr
			}
			printVolumes(s, volumes, dryRun)
			for _, d := range dirs {
				verb := "removed"
				if dryRun {
					verb = "would remove"
				}
				fmt.Fprintf(s.out, "%s egress proxy folder %s (owner gone)\n", verb, d)
			}
			if len(reaped) == 0 && len(dirs) == 0 && err == nil {
				fmt.Fprintln(s.out, "no leaked sandboxes")
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "also remove sandboxes older than this, whatever their owner")
	return cmd
}

// splitReaped separates removed containers from removed volumes (usr
// volumes, which have no run id and are named sandboxrun-usr...).
func splitReaped(all []sandbox.Reaped) (containers, volumes []sandbox.Reaped) {
	for _, r := range all {
		// Volumes (usr volumes, and workspace volumes a killed owner left)
		// are reported by name, which no container ID equals.
		if r.ID == r.Name && strings.HasPrefix(r.Name, "sandboxrun-") {
			volumes = append(volumes, r)
			continue
		}
		containers = append(containers, r)
	}
	return containers, volumes
}

// printVolumes says what became of each volume reap or prune found.
func printVolumes(s streams, volumes []sandbox.Reaped, dryRun bool) {
	for _, v := range volumes {
		verb := "removed"
		switch {
		case dryRun:
			verb = "would remove"
		case !v.Removed:
			verb = "kept (in use)"
		}
		fmt.Fprintf(s.out, "%s volume %s: %s\n", verb, v.Name, v.Reason)
	}
}
