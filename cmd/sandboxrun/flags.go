package main

import (
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/policy"
)

// execFlags are the flags shared by run, exec and python.
type execFlags struct {
	args       string
	argsFile   string
	timeout    string
	memory     string
	cpus       float64
	workspace  string
	env        []string
	json       bool
	auditLog   string
	image      string
	ociRuntime string
	noBuild    bool
	// allowDomains narrows the egress allowlist (egress.go).
	allowDomains []string
	cwd          string
	// grantTools are allowed-tools the operator (the CLI's user) grants
	// the skill for this invocation (--grant-tools).
	grantTools string
	// argv are the script's command-line arguments, the words after --.
	argv []string
}

// register adds the flags to fs; jsonHelp says what --json prints for this
// command.
func (f *execFlags) register(fs *pflag.FlagSet, withArgs bool, jsonHelp string) {
	if withArgs {
		fs.StringVar(&f.args, "args", "", "JSON object passed to the script on stdin ('-' reads it from stdin)")
		fs.StringVar(&f.argsFile, "args-file", "", "read the JSON arguments from a file")
	}
	fs.StringVar(&f.timeout, "timeout", "", "wall-clock limit: seconds (10) or a duration (10s, 2m); replaces the skill's max_execution_time, up to the policy's ceiling (default: the skill's, else the policy's default, 30s built in)")
	fs.StringVar(&f.memory, "memory", "", "memory limit in MiB, or with a unit: 256m, 1g; replaces the skill's max_memory, up to the policy's ceiling")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU limit, e.g. 0.5; replaces the skill's max_cpus, up to the policy's ceiling")
	fs.StringVar(&f.workspace, "workspace", ".", "host folder mounted at /workspace, read-only; with Write in allowed-tools a copy capped at the policy's workspace_write (default 1GiB) is handed back after the run. /, system folders and the Docker socket's folder are refused")
	fs.StringArrayVar(&f.env, "env", nil, "extra variable for the script, K=V (repeatable; reserved names are refused)")
	fs.BoolVar(&f.json, "json", false, jsonHelp)
	fs.StringVar(&f.auditLog, "audit-log", os.Getenv("SANDBOXRUN_AUDIT_LOG"), "append one JSON line per execution to this file (default $SANDBOXRUN_AUDIT_LOG)")
	fs.StringVar(&f.ociRuntime, "oci-runtime", os.Getenv("SANDBOXRUN_OCI_RUNTIME"), "engine runtime for the sandbox, e.g. runsc (gVisor) or kata, as registered in the engine (default $SANDBOXRUN_OCI_RUNTIME, else the engine's default)")
	fs.StringVar(&f.image, "image", "", "image to run (default: the skill's image when it declares packages, else "+sandboxrun.RunnerImage()+")")
	fs.BoolVar(&f.noBuild, "no-build", false, "fail (exit 3) instead of building a missing skill image first")
	registerAllowDomain(fs, f)
	fs.StringVar(&f.grantTools, "grant-tools", "", "allowed-tools you grant the skill for this run, as the policy's skills.<name>.allowed-tools would, e.g. 'Bash(python:*)'; added to what the skill declares (for a framework that runs skills with a list of its own)")
	fs.StringVar(&f.cwd, "cwd", "workspace", "working directory in the sandbox: workspace (/workspace) or skill (/skills/<name>, read-only; for instructions that say `python scripts/x.py`)")
}

// grant adds --grant-tools to the operator policy's grants for the skill
// ref names: the CLI's user is the operator. Nothing from the skill or the
// command widens it; without the flag the policy is left as it is.
func (f *execFlags) grant(g *globals, ref string) error {
	if f.grantTools == "" {
		return nil
	}
	svc, err := g.skillService()
	if err != nil {
		return err
	}
	defer svc.Close()
	sk, err := svc.Skill(ref)
	if err != nil {
		return err
	}
	pol, err := g.pol.WithTools(sk.Manifest.Name, f.grantTools)
	if err != nil {
		return usageError("--grant-tools: %v", err)
	}
	g.pol = pol
	return nil
}

// request turns the flags into a library request; stdin serves --args -.
func (f *execFlags) request(stdin io.Reader, pol *policy.Operator) (sandboxrun.Request, error) {
	var req sandboxrun.Request
	args, err := f.readArgs(stdin)
	if err != nil {
		return req, err
	}
	env, err := parseEnv(f.env)
	if err != nil {
		return req, err
	}
	mem, err := parseMiB(f.memory)
	if err != nil {
		return req, err
	}
	var timeout time.Duration
	if f.timeout != "" {
		if timeout, err = policy.ParseSeconds(f.timeout); err != nil {
			return req, usageError("--timeout: %v", err)
		}
	}
	if f.cpus < 0 {
		return req, usageError("--cpus must not be negative")
	}
	workDir, err := policy.ParseWorkDir(f.cwd)
	if err != nil {
		return req, usageError("--cwd: %v", err)
	}
	return sandboxrun.Request{
		Args:      args,
		Argv:      f.argv,
		WorkDir:   workDir,
		Workspace: f.workspace,
		Env:       env,
		Timeout:   timeout,
		MemoryMiB: mem,
		CPUs:      f.cpus,
		Image:     f.image,
		NoBuild:   f.noBuild,
		Policy:    pol,

		AllowDomains: f.allowDomainsRequest(),
	}, nil
}

// splitAtDash splits a command's arguments at "--": the positional
// arguments before it, and the script's own arguments after it (nil when
// there is no "--"). want is how many positional arguments the command
// takes, what names them for the usage error.
func splitAtDash(cmd *cobra.Command, args []string, want int, what string) (positional, scriptArgs []string, err error) {
	positional = args
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		positional, scriptArgs = args[:dash], slices.Clone(args[dash:])
	}
	if len(positional) != want {
		hint := ""
		if len(positional) > want {
			hint = "; the script's own arguments go after --, e.g. " + cmd.Name() + " SKILL scripts/x.py -- --input data.csv"
		}
		return nil, nil, usageError("%s takes %s (got %d)%s; see '%s --help'", cmd.Name(), what, len(positional), hint, cmd.CommandPath())
	}
	return positional, scriptArgs, nil
}

func (f *execFlags) readArgs(stdin io.Reader) ([]byte, error) {
	switch {
	case f.args != "" && f.argsFile != "":
		return nil, usageError("--args and --args-file are exclusive: pass one")
	case f.args == "-":
		return readBounded(stdin, "stdin")
	case f.argsFile != "":
		file, err := os.Open(f.argsFile)
		if err != nil {
			return nil, usageError("--args-file: %v", err)
		}
		defer file.Close()
		return readBounded(file, f.argsFile)
	default:
		return []byte(f.args), nil
	}
}

// readBounded reads at most one byte past the argument cap, so an oversized
// input is refused by policy without being read whole.
func readBounded(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, policy.MaxArgsBytes+1))
	if err != nil {
		return nil, usageError("reading arguments from %s: %v", name, err)
	}
	return b, nil
}

func parseEnv(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--env %q: expected K=V", kv)
		}
		env[k] = v
	}
	return env, nil
}

// parseMiB reads --memory in the size grammar of package size, as a whole
// number of MiB; a plain number is MiB, as it always was on this flag.
func parseMiB(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := size.ParseMiB(s)
	if err != nil || n > 1<<30 {
		return 0, usageError("--memory %q: expected a size like 256, 256m or 1g", s)
	}
	return n, nil
}
