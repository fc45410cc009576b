package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/skill"
)

func newShowCmd(g *globals, s streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [--json] SKILL",
		Short: "Activate a skill: its instructions with {baseDir} resolved, its files and tools",
		Long: `show prints what an agent receives when it activates SKILL: the body of
SKILL.md with {baseDir} resolved to the skill's folder inside the sandbox
(/skills/<name>), the files under scripts/, references/ and assets/, and the
parsed allowed-tools with what the operator policy grants the skill.

SKILL is a name under the skills root, or a path to a skill folder (anything
containing '/', or '.').`,
		Args: exactArgs(1, "one SKILL"),
		RunE: func(_ *cobra.Command, args []string) error {
			svc, err := g.skillService()
			if err != nil {
				return err
			}
			act, err := svc.For(sandboxrun.Local).Activate(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(act)
			}
			return writeActivation(s.out, act)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the activation as JSON")
	return cmd
}

func writeActivation(w io.Writer, a *skill.Activation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n%s\n\nBase directory: %s\n", a.Name, a.Description, a.BaseDir)
	section := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", title)
		for _, it := range items {
			fmt.Fprintf(&b, "  %s\n", it)
		}
	}
	section("Scripts", a.Scripts)
	section("References", a.References)
	section("Assets", a.Assets)
	tools := make([]string, 0, len(a.AllowedTools))
	for _, t := range a.AllowedTools {
		tools = append(tools, t.String())
	}
	section("Allowed tools", tools)
	fmt.Fprintf(&b, "\n%s", a.Body)
	if !strings.HasSuffix(a.Body, "\n") {
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
