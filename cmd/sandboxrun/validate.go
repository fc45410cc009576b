package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun/skill"
)

func newValidateCmd(g *globals, s streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [--strict] [--json] PATH...",
		Short: "Check skills against the Agent Skills spec and sandboxrun's rules",
		Long: `validate checks each PATH, a skill folder or a folder of skills (in any layout
list finds).

Errors make a skill invalid. A name that breaks the Agent Skills specification
(capitals, "_", "--", over 64 characters, unlike its folder's name) is an error
with or without --strict, as in the spec's reference validator: other hosts
refuse such a skill, although sandboxrun still lists and runs it with a warning.
Warnings point at things sandboxrun reads but the specification does not define,
such as execution fields at the top level; with --strict they are errors too.

Exit status: 0 when every skill is valid, 1 when any is invalid, 2 for usage errors.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("validate needs at least one PATH (a skill folder or a folder of skills)")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			var reports []skill.Report
			for _, p := range args {
				rs, err := skill.ValidatePath(p, g.strict)
				if err != nil {
					return withCode(exitRefused, err)
				}
				reports = append(reports, rs...)
			}
			if err := printReports(s.out, reports, asJSON); err != nil {
				return err
			}
			for _, r := range reports {
				if !r.Valid {
					return silentExit(exitInvalid)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print [{path, name, valid, errors, warnings}]")
	return cmd
}

func printReports(w io.Writer, reports []skill.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if reports == nil {
			reports = []skill.Report{}
		}
		return enc.Encode(reports)
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		status := "valid"
		if !r.Valid {
			status = "INVALID"
		}
		if r.Name == "" {
			// The frontmatter did not parse far enough to name the skill.
			fmt.Fprintf(w, "%s: %s\n", r.Path, status)
		} else {
			fmt.Fprintf(w, "%s: %s (%s)\n", r.Path, status, r.Name)
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  error: %s\n", e)
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", wn)
		}
	}
	return nil
}
