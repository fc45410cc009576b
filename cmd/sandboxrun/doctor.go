package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun/doctor"
)

// Exit statuses of doctor: an isolation property failed, or the setup could
// not be checked (exitEnv).
const exitIsolationFailed = 1

func newDoctorCmd(g *globals, s streams) *cobra.Command {
	var asJSON bool
	var ociRuntime string
	cmd := &cobra.Command{
		Use:   "doctor [--json] [--policy FILE] [--oci-runtime NAME]",
		Short: "Check this host's engine and, from inside a real sandbox, its isolation",
		Long: `doctor asks the engine (or cluster) about itself, then runs a probe script
in a sandbox made exactly as a run's (same policy, runtime and backend) and
judges what the process inside sees: its user, capabilities, no_new_privs,
seccomp, network interfaces and DNS, read-only root and skill folder, the
workspace, engine sockets, /proc and /sys, the cgroup's memory, CPU and pids
limits against the ones the run was promised, and the runtime.

Each line is PASS, WARN or FAIL with a reason, and a fix for the others.
Exit status: 0 nothing failed, 1 an isolation property failed, 3 the
environment could not be checked (engine, image or runtime missing).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := doctor.Run(cmd.Context(), doctor.Options{Policy: g.pol, OCIRuntime: ociRuntime, Logger: g.logger})
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(s.out, rep)
			} else {
				err = printReport(s.out, rep)
			}
			if err != nil {
				return withCode(exitEnv, err)
			}
			return doctorExit(rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&ociRuntime, "oci-runtime", "", "engine runtime to check the sandbox under (runsc, kata), as run's --oci-runtime")
	return cmd
}

// printReport writes one line per check, the fix under any that did not
// pass, and a count.
func printReport(w io.Writer, rep *doctor.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	counts := map[doctor.Status]int{}
	for _, c := range rep.Checks {
		counts[c.Status]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Status, c.Area, c.Name, c.Reason)
		if c.Fix != "" {
			fmt.Fprintf(tw, "\t\t\tfix: %s\n", c.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d checks (backend %s): %d pass, %d warn, %d fail, %d not checked\n",
		len(rep.Checks), rep.Backend, counts[doctor.Pass], counts[doctor.Warn], counts[doctor.Fail], counts[doctor.Skip])
	return err
}

// doctorExit is the command's exit: 1 when an isolation property failed, 3
// when something could not be checked, else 0.
func doctorExit(rep *doctor.Report) error {
	switch {
	case rep.IsolationFailed():
		return silentExit(exitIsolationFailed)
	case rep.Unchecked():
		return silentExit(exitEnv)
	}
	return nil
}
