package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func newPythonCmd(g *globals, s streams) *cobra.Command {
	f := &execFlags{}
	var code, file string
	cmd := &cobra.Command{
		Use:   "python [flags] SKILL (--code CODE | --file F) [-- ARG...]",
		Short: "Run model-written Python code in the skill's sandbox",
		Long: `python runs inline Python code in SKILL's sandbox: the same image, mounts
and limits as the skill's scripts, with /workspace as the working directory.
The code reaches python3 on its stdin; the words after -- are its sys.argv[1:]
(sys.argv[0] is "-"), passed exactly as given.

With --json it answers as agent tools expect:
{skill_name, stdout, stderr, returncode, timed_out, error}; a timeout gives
returncode -1, timed_out true and an error naming the limit. A refusal or an
environment failure also answers in that shape (returncode -1, error set).

Exit status: as for run (the code's own, 124, 128+N, 2, 3 or 125).`,
		Example: `  sandboxrun python data-analysis --code 'print(sum(range(10)))'
  sandboxrun python --json hello --code 'import os; print(os.listdir("/skills/hello/scripts"))'
  sandboxrun python --timeout 5s hello --file snippet.py -- report.csv`,
		Args: cobra.ArbitraryArgs, // split at -- in RunE
		RunE: func(cmd *cobra.Command, args []string) error {
			args, scriptArgs, err := splitAtDash(cmd, args, 1, "one SKILL")
			if err != nil {
				return err
			}
			f.argv = scriptArgs
			res, err := runPython(cmd, g, s, f, args[0], code, file)
			if f.json {
				// An agent tool reads stdout: a refusal, an environment
				// failure or a sandbox that failed mid-run still answers in
				// its shape (the exit status and stderr say the same for
				// people).
				if werr := writeJSON(s.out, sandboxrun.NewPythonResult(args[0], res, err)); werr != nil && err == nil {
					return withCode(exitEnv, werr)
				}
			}
			switch {
			case err != nil && res != nil && res.Started:
				return midRunFailure(err)
			case err != nil:
				return err
			case !f.json:
				explain(s.err, res)
			}
			if code := exitStatus(res); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&code, "code", "", "Python source to run")
	cmd.Flags().StringVar(&file, "file", "", "file holding the Python source to run")
	f.register(cmd.Flags(), false, "answer on stdout as {skill_name, stdout, stderr, returncode, timed_out, error}")
	return cmd
}

// runPython reads the code and runs it through the Service.
func runPython(cmd *cobra.Command, g *globals, s streams, f *execFlags, ref, code, file string) (*sandbox.Result, error) {
	src, err := pythonSource(code, file)
	if err != nil {
		return nil, err
	}
	return runThrough(cmd.Context(), g, s, f, ref, cmd.InOrStdin(),
		func(ctx context.Context, svc *sandboxrun.Service, req sandboxrun.Request) (*sandbox.Result, error) {
			return svc.RunPython(ctx, ref, src, req)
		})
}

func pythonSource(code, file string) ([]byte, error) {
	switch {
	case code != "" && file != "":
		return nil, usageError("--code and --file are exclusive: pass one")
	case code != "":
		return []byte(code), nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usageError("--file: %v", err)
		}
		return b, nil
	}
	return nil, usageError("python needs the code: pass --code CODE or --file F")
}
