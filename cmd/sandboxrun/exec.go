package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// decision is `exec --dry-run --json` output.
type decision struct {
	Allowed bool   `json:"allowed"`
	Skill   string `json:"skill"`
	Command string `json:"command"`
	Part    string `json:"part,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Suggest string `json:"suggest,omitempty"`
	// Host says whether the engine's host was asked (its CPUs, memory,
	// runtimes), as the run would ask it.
	Host sandboxrun.HostCheck `json:"host"`
}

func newExecCmd(g *globals, s streams) *cobra.Command {
	f := &execFlags{}
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "exec [flags] SKILL -- 'COMMAND'",
		Short: "Check a shell command against the skill's allowed-tools and run it in a sandbox",
		Long: `exec is the Bash-tool path. COMMAND is one string, as an agent's Bash tool
passes it. It is parsed as shell (never run by a shell on the host); every
simple command in it must be allowed by a Bash(...) entry of the skill's
allowed-tools. Command and process substitution, eval and exec are refused.
A skill without allowed-tools allows no commands.

Refused too, because bash could read them differently from the check: a
backslash at the end of a line (write the command on one line), carriage
returns (use \n line ends), control bytes, here-document delimiters other than
a plain word (<<EOF, <<'EOF'), commands over 64 KiB or nested over 64 deep.
--env refuses variables that make programs load code (BASH_ENV, LD_*,
PYTHONPATH, NODE_OPTIONS, GIT_*, ...).

An allowed command runs under bash inside the sandbox, with /workspace as its
working directory (--cwd skill: the skill's folder). Write COMMAND as the
skill's instructions do: before the check, {baseDir}, ${CLAUDE_PLUGIN_ROOT}
and ${CLAUDE_SKILL_DIR} become /skills/<name>, and a skill script that is the
program or the first argument of python, python3, bash, sh or node
(python scripts/fill.py form.pdf) is named by its sandbox path, when the
skill has it. The check judges, and bash runs, the resolved command, which
--dry-run prints. Name the user's files relative to /workspace.
--args reach the command on its stdin. --dry-run prints the decision without
running anything (the command's check, then the limits, environment and
workspace of the run these flags ask for): exit 0 when allowed, 2 when
denied; with --json it prints {allowed, skill, command, part, reason,
suggest}.

Exit status: the command's own; 124 on timeout; 128+N when killed by signal N;
2 when denied or refused before running; 3 when the environment failed before
the start; 125 when the sandbox failed mid-run (--json still prints the Result).`,
		Example: `  sandboxrun exec --dry-run hello -- 'python3 /skills/hello/scripts/echo.py | jq .'
  sandboxrun exec data-analysis -- 'python3 scripts/top.py sales.csv --by price'
  sandboxrun exec hello -- 'echo hi && python3 /skills/hello/scripts/echo.py'
  sandboxrun exec --args '{"n": 1}' hello -- 'python3 /skills/hello/scripts/echo.py'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError("exec takes SKILL and one quoted COMMAND (got %d arguments): sandboxrun exec SKILL -- 'cmd arg | other'", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if dryRun {
				if err := f.grant(g, args[0]); err != nil {
					return err
				}
				req, err := f.request(cmd.InOrStdin(), g.pol)
				if err != nil {
					return err
				}
				svc, err := g.skillService()
				if err != nil {
					return err
				}
				defer svc.Close()
				// The plan this very run would execute: the command, then
				// the flags' limits, environment and workspace.
				e, err := svc.Explain(cmd.Context(), args[0], sandboxrun.Action{Command: args[1]}, req)
				if e == nil {
					return err
				}
				return reportDecision(s, f.json, e, err)
			}
			res, err := runThrough(cmd.Context(), g, s, f, args[0], cmd.InOrStdin(),
				func(ctx context.Context, svc *sandboxrun.Service, req sandboxrun.Request) (*sandbox.Result, error) {
					return svc.RunCommand(ctx, args[0], args[1], req)
				})
			return report(s, f, res, err)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the policy decision and exit: 0 allowed, 2 denied")
	f.register(cmd.Flags(), true, "print the Result as JSON on stdout when the command ends (with --dry-run: the decision)")
	return cmd
}

func reportDecision(s streams, asJSON bool, e *sandboxrun.Explanation, err error) error {
	command := e.Command
	d := decision{Allowed: err == nil, Skill: e.Skill, Command: command, Host: hostView(e.Host)}
	var denied *policy.DeniedError
	if errors.As(err, &denied) {
		d.Part, d.Reason, d.Suggest = denied.Part, denied.Reason, denied.Suggest
	} else if err != nil {
		d.Reason = err.Error()
	}
	if asJSON {
		if werr := writeJSON(s.out, d); werr != nil {
			return withCode(exitEnv, werr)
		}
	} else if d.Allowed {
		fmt.Fprintf(s.out, "allowed: %s\n", command)
		fmt.Fprintf(s.out, "host: %s\n", hostLine(d.Host))
		if d.Host.Isolation != "" {
			fmt.Fprintf(s.out, "network isolation: %s\n", d.Host.Isolation)
		}
	} else {
		fmt.Fprintf(s.out, "denied: %v\n", err)
	}
	if !d.Allowed {
		return silentExit(exitRefused)
	}
	return nil
}
