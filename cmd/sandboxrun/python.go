package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// pythonResult is the shape agent tools expect from a run_python_script call.
type pythonResult struct {
	SkillName  string `json:"skill_name"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ReturnCode int    `json:"returncode"`
	TimedOut   bool   `json:"timed_out"`
	Error      string `json:"error,omitempty"`
}

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
			name, res, err := runPython(cmd, g, s, f, args[0], code, file)
			if err != nil && res != nil && res.Started {
				// The sandbox failed mid-run: what it printed so far, and why.
				if f.json {
					pr := toPythonResult(res)
					pr.ReturnCode = -1
					if pr.Error == "" {
						pr.Error = err.Error()
					}
					_ = writeJSON(s.out, pr)
				}
				return midRunFailure(err)
			}
			if err != nil {
				// An agent tool reads stdout: a refusal or an environment
				// failure still answers in its shape (the exit status and
				// stderr say the same for people).
				if f.json {
					_ = writeJSON(s.out, pythonResult{SkillName: name, ReturnCode: -1, Error: err.Error()})
				}
				return err
			}
			if !f.json {
				explain(s.err, res)
			} else if err := writeJSON(s.out, toPythonResult(res)); err != nil {
				return withCode(exitEnv, err)
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

// runPython checks and runs the code. name is the skill's name once it is
// known, else ref, so a failure can still be reported in the agent's shape.
func runPython(cmd *cobra.Command, g *globals, s streams, f *execFlags, ref, code, file string) (name string, res *sandbox.Result, err error) {
	src, err := pythonSource(code, file)
	if err != nil {
		return ref, nil, err
	}
	sk, err := loadSkill(g, ref)
	if err != nil {
		return ref, nil, err
	}
	req, err := f.request(cmd.InOrStdin(), g.pol)
	if err != nil {
		return sk.Manifest.Name, nil, err
	}
	p, err := sandboxrun.PreparePython(sk, src, req)
	if err != nil {
		auditRefusal(g, f, sk, "", []string{"python3", "-"}, src, err)
		return sk.Manifest.Name, nil, err
	}
	e := &execution{g: g, s: s, f: f, sk: sk, p: p}
	res, err = e.run(cmd.Context(), !f.json)
	return sk.Manifest.Name, res, err
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

func toPythonResult(res *sandbox.Result) pythonResult {
	pr := pythonResult{
		SkillName:  res.Skill,
		Stdout:     res.Stdout,
		Stderr:     res.Stderr,
		ReturnCode: res.ExitCode,
		TimedOut:   res.TimedOut,
		Error:      res.Error,
	}
	switch {
	case res.TimedOut:
		pr.ReturnCode = -1
		pr.Error = fmt.Sprintf("Execution timed out after %g seconds", res.Limits.TimeoutSec)
	case res.OOMKilled:
		pr.Error = fmt.Sprintf("Execution exceeded the memory limit of %d MiB", res.Limits.MemoryBytes>>20)
	case res.Signal != "" && pr.Error == "":
		pr.Error = "Execution killed by " + res.Signal
	}
	return pr
}
