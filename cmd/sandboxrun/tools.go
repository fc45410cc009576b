package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/mcp"
)

func newToolsCmd(g *globals, s streams) *cobra.Command {
	var format string
	names := make([]string, 0, len(mcp.Formats))
	for _, f := range mcp.Formats {
		names = append(names, string(f))
	}
	cmd := &cobra.Command{
		Use:   "tools [--format " + strings.Join(names, "|") + "] [--skills DIR]",
		Short: "Print the MCP server's tools as function definitions for a model provider",
		Long: `tools prints the tools of 'sandboxrun mcp' (list_skills, activate_skill,
run_skill_script, run_skill_command, run_python) as JSON, for hosts that run
their own agent loop:

  openai     a "tools" array for OpenAI function calling (Chat Completions),
             strict mode: every property required, the optional ones nullable,
             additionalProperties false
  anthropic  a "tools" array for Anthropic tool use ({name, description,
             input_schema})
  mcp        the MCP tools/list result, as the server answers it

All three come from one set of schemas. The arguments a model writes for any
of them are valid arguments of the MCP server's tools/call as they are, so a
host can forward them to 'sandboxrun mcp' or to /mcp of 'sandboxrun serve'.

With --skills DIR (or $SANDBOXRUN_SKILLS), the skill parameter of every tool
is limited to the names of the skills found there.`,
		Example: `  sandboxrun tools --format openai > tools.json
  sandboxrun tools --format anthropic --skills /srv/skills`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var skills []string
			if g.skills != "" || os.Getenv("SANDBOXRUN_SKILLS") != "" {
				var err error
				if skills, err = skillNames(g, s); err != nil {
					return err
				}
			}
			defs, err := mcp.Definitions(mcp.Format(format), skills)
			if errors.Is(err, mcp.ErrUnknownFormat) {
				return usageError("--format: %v", err)
			}
			if err != nil {
				return err
			}
			if err := writeJSON(s.out, defs); err != nil {
				return withCode(exitEnv, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", string(mcp.Formats[0]), "the provider's format: "+strings.Join(names, ", "))
	return cmd
}

// skillNames lists the skills under the skills root; broken ones are
// reported on stderr and left out, as list does.
func skillNames(g *globals, s streams) ([]string, error) {
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: g.skillsRoots(), Strict: g.strict})
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	skills, errs := svc.Skills()
	for _, err := range errs {
		fmt.Fprintf(s.err, "sandboxrun: skipped: %v\n", err)
	}
	if len(skills) == 0 {
		return nil, usageError("no skills in %s: pass --skills DIR with the skills the tools may name", strings.Join(g.skillsRoots(), ":"))
	}
	names := make([]string, 0, len(skills))
	for _, sk := range skills {
		names = append(names, sk.Manifest.Name)
	}
	return names, nil
}
