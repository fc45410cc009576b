package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func newRunCmd(g *globals, s streams) *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] SKILL SCRIPT [-- ARG...]",
		Short: "Run one of a skill's scripts in a fresh sandbox",
		Long: `run executes SCRIPT of SKILL in its own container and relays its output.

SCRIPT is scripts/x.py, {baseDir}/scripts/x.py or /skills/<name>/scripts/x.py;
it must resolve inside the skill's scripts/ folder. The words after -- are the
script's command-line arguments, passed exactly as given (never through a
shell); JSON from --args arrives on its stdin; both may be given. The script
starts in /workspace (the current directory, read-only unless the skill has
Write), so a file argument is named as it is there: data.csv, or
/workspace/data.csv. --cwd skill starts it in the skill's own folder instead.
Limits: --timeout, --memory and --cpus, else the
skill's frontmatter, else the operator policy's defaults, held to the policy's
ceilings (--policy FILE; see 'sandboxrun policy show').

Exit status: the script's own; 124 on timeout; 128+N when killed by signal N;
2 when refused before running (policy, path, arguments, usage); 3 when the
environment failed before the sandbox started (Docker unreachable, image
missing); 125 when the sandbox started but failed mid-run (killed from outside,
engine failure). With --json the Result is printed whenever the sandbox
started (with error set on 125); a refusal or environment failure before the
start prints nothing on stdout and the reason on stderr.`,
		Example: `  sandboxrun run hello scripts/echo.py --args '{"name": "world"}'
  sandboxrun run csv-tools scripts/summarize.py -- --input sales.csv --top 3
  echo '{"columns": ["price"]}' > args.json
  sandboxrun run --json data-analysis scripts/stats.py --args-file args.json
  echo '{"n": 1}' | sandboxrun run ./skills/hello scripts/echo.sh --args -`,
		Args: cobra.ArbitraryArgs, // split at -- in RunE
		RunE: func(cmd *cobra.Command, args []string) error {
			args, scriptArgs, err := splitAtDash(cmd, args, 2, "SKILL and SCRIPT")
			if err != nil {
				return err
			}
			f.argv = scriptArgs
			res, err := runThrough(cmd.Context(), g, s, f, args[0], cmd.InOrStdin(),
				func(ctx context.Context, svc *sandboxrun.Service, req sandboxrun.Request) (*sandbox.Result, error) {
					return svc.RunScript(ctx, args[0], args[1], req)
				})
			return report(s, f, res, err)
		},
	}
	f.register(cmd.Flags(), true, "print the Result as JSON on stdout when the script ends, instead of relaying its output live")
	return cmd
}
