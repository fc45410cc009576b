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
		Use:   "run [flags] SKILL SCRIPT",
		Short: "Run one of a skill's scripts in a fresh sandbox",
		Long: `run executes SCRIPT of SKILL in its own container and relays its output.

SCRIPT is scripts/x.py, {baseDir}/scripts/x.py or /skills/<name>/scripts/x.py;
it must resolve inside the skill's scripts/ folder. The JSON arguments arrive on
the script's stdin. Limits: --timeout, --memory and --cpus, else the
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
  echo '{"columns": ["price"]}' > args.json
  sandboxrun run --json data-analysis scripts/stats.py --args-file args.json
  echo '{"n": 1}' | sandboxrun run ./skills/hello scripts/echo.sh --args -`,
		Args: exactArgs(2, "SKILL and SCRIPT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := runThrough(cmd.Context(), g, s, f, cmd.InOrStdin(),
				func(ctx context.Context, svc *sandboxrun.Service, req sandboxrun.Request) (*sandbox.Result, error) {
					return svc.RunScript(ctx, args[0], args[1], req)
				})
			return report(s, f, res, err)
		},
	}
	f.register(cmd.Flags(), true, "print the Result as JSON on stdout when the script ends, instead of relaying its output live")
	return cmd
}
