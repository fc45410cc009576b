package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
)

func newUsageCmd(g *globals, s streams) *cobra.Command {
	var state, format string
	cmd := &cobra.Command{
		Use:   "usage --state DIR [--format table|json]",
		Short: "Show every token's usage by label: runs, CPU, memory and egress per window",
		Long: `usage reads the usage state a server keeps under serve --state DIR and shows
each token label's use in the windows now running (an hour, a day, and every
window a quota of the policy's tenants block names) against its quotas, and in
all since the state began. Pass the policy the server runs with (--policy) so
the windows and quotas are the server's. The server writes the file whole after
each run, so it may be read while the server runs.`,
		Example: `  sandboxrun usage --state /var/lib/sandboxrun/state
  sandboxrun usage --state /var/lib/sandboxrun/state --format json | jq '.tenants[] | {label, total}'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if state == "" {
				return usageError("usage needs --state DIR: the folder serve --state writes (or $SANDBOXRUN_STATE)")
			}
			ts, err := sandboxrun.ReadUsageState(sandboxrun.UsageStatePath(state), g.pol)
			if err != nil {
				return withCode(exitEnv, err)
			}
			switch format {
			case "json":
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"tenants": ts})
			case "table":
				return writeUsageTable(s, ts)
			}
			return usageError("unknown --format %q: use table or json", format)
		},
	}
	cmd.Flags().StringVar(&state, "state", os.Getenv("SANDBOXRUN_STATE"), "the server's state folder (serve --state; default $SANDBOXRUN_STATE)")
	cmd.Flags().StringVar(&format, "format", "table", "output format: table or json")
	return cmd
}

func writeUsageTable(s streams, ts []sandboxrun.TenantUsage) error {
	if len(ts) == 0 {
		_, err := fmt.Fprintln(s.out, "no usage recorded yet")
		return err
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LABEL\tWINDOW\tRUNS\tCPU S\tMEMORY GIB-S\tEGRESS BYTES\tQUOTA")
	for _, t := range ts {
		for _, w := range t.Windows {
			quota := "-"
			if l := w.Limits; l != nil {
				quota = fmt.Sprintf("runs %d, cpu %gs, memory %g GiB-s, egress %d", l.Runs, l.CPUSeconds, l.MemoryGiBSeconds, l.EgressBytes)
			}
			u := w.Used
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%d\t%s\n", t.Label, w.Window, u.Runs, float64(u.CPUTimeMS)/1000, u.MemoryGiBSeconds, u.EgressBytes, quota)
		}
		u := t.Total
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%d\t%s\n", t.Label, "all", u.Runs, float64(u.CPUTimeMS)/1000, u.MemoryGiBSeconds, u.EgressBytes, "-")
	}
	return tw.Flush()
}
