package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
)

type streams struct {
	in       io.Reader
	out, err io.Writer
}

// globals are the flags every command shares.
type globals struct {
	skills     string
	policyFile string
	verbose    bool
	// strict refuses skills that break a spec rule sandboxrun would only
	// warn about (validate: warnings become errors).
	strict bool
	// warnings receives what a command tells the user besides its output.
	warnings io.Writer
	logger   *slog.Logger
	// pol is the operator policy, loaded when a command starts.
	pol *policy.Operator
	// ran is set once a command starts; an error before that is cobra's
	// own (unknown command or flag), a usage error.
	ran   bool
	trace tracing
}

func execute(ctx context.Context, args []string, s streams) int {
	g := &globals{warnings: s.err}
	root := newRootCmd(g, s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ours *exitError
	if err != nil && !g.ran && !errors.As(err, &ours) {
		// cobra's own error (unknown command or flag, bad flag value): a
		// usage error. Ours already carry their code and hint.
		err = withCode(exitRefused, fmt.Errorf("%w (see 'sandboxrun --help')", err))
	}
	if err != nil {
		if msg := err.Error(); msg != "" && !isSilent(err) {
			fmt.Fprintf(s.err, "sandboxrun: %s\n", msg)
		}
	}
	code := codeOf(err)
	g.trace.end(code)
	return code
}

// logLevel is debug with -v, else warnings only.
func (g *globals) logLevel() slog.Level {
	if g.verbose {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

func newRootCmd(g *globals, s streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "sandboxrun",
		Short: "Run Agent Skills scripts in ephemeral, locked-down Docker containers",
		Long: `sandboxrun runs every skill script, command and piece of model-written code
in its own ephemeral Docker container: the skill mounted read-only, no network
unless the skill declares network_access, memory/CPU/pids caps, JSON arguments
on stdin, a hard timeout, capped output and a precise result.`,
		Version:       sandboxrun.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			g.ran = true
			if err := g.trace.start(cmd); err != nil {
				return err
			}
			g.logger = slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: g.logLevel()}))
			// A broken policy file stops every command at start, not at
			// the first run.
			pol, err := policy.LoadPolicy(policy.FilePath(g.policyFile, os.Getenv))
			if err != nil {
				return withCode(exitRefused, err)
			}
			g.pol = pol
			return nil
		},
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%w; see '%s --help'", err, c.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.skills, "skills", "", "skills root folders, ':'-separated; skills are found in any layout below each (default $SANDBOXRUN_SKILLS, else ./skills)")
	pf.BoolVar(&g.strict, "strict", false, "refuse skills that break an Agent Skills spec rule (a name unlike its folder, non-string metadata, an allowed-tools entry sandboxrun cannot read); validate: warnings become errors")
	pf.StringVar(&g.policyFile, "policy", "", "operator policy file (default $SANDBOXRUN_POLICY, else "+policy.DefaultPolicyPath+" when it exists, else the built-in policy)")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug details to stderr")
	pf.BoolVar(&g.trace.on, "trace", false, "export an OpenTelemetry trace of each request over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME; OTEL_TRACES_EXPORTER=otlp also turns it on)")

	root.AddCommand(
		newValidateCmd(g, s),
		newListCmd(g, s),
		newShowCmd(g, s),
		newRunCmd(g, s),
		newExecCmd(g, s),
		newPythonCmd(g, s),
		newReapCmd(g, s),
		newImagesCmd(g, s),
		newBuildCmd(g, s),
		newPolicyCmd(g, s),
		newServeCmd(g, s),
		newUsageCmd(g, s),
		newMCPCmd(g, s),
		newToolsCmd(g, s),
		newDoctorCmd(g, s),
	)
	// Every Use line already spells out its flags.
	var plain func(*cobra.Command)
	plain = func(c *cobra.Command) {
		c.DisableFlagsInUseLine = true
		for _, sub := range c.Commands() {
			plain(sub)
		}
	}
	plain(root)
	return root
}

// exactArgs is cobra.ExactArgs with a usage exit status and a hint.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %s (got %d); see '%s --help'", cmd.Name(), what, len(args), cmd.CommandPath())
		}
		return nil
	}
}

func isSilent(err error) bool {
	ee, ok := err.(*exitError) //nolint:errorlint // only the outermost error decides whether to print
	return ok && ee.err == nil
}
