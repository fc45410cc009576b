package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/mcp"
)

func newMCPCmd(g *globals, s streams) *cobra.Command {
	var auditLog, ociRuntime string
	var warm *warmFlags
	cmd := &cobra.Command{
		Use:   "mcp [--skills DIR] [--policy FILE] [--audit-log FILE] [--oci-runtime NAME] [--warm-pool N]",
		Short: "Serve the skills and sandboxed runs to an MCP host over stdio",
		Long: `mcp is a Model Context Protocol server on stdin/stdout, for agent hosts
(Claude Code, Claude Desktop, IDEs) to start as a subprocess. It offers the
tools list_skills, activate_skill, run_skill_script, run_skill_command and
run_python, and each skill's files as resources skill://NAME/PATH.

Every run goes through the same checks as run, exec and python: the operator
policy (--policy), the skill's allowed-tools, a fresh sandbox, the audit log.
The model names skills and files inside them, never host paths, and runs have
no workspace. Logs go to stderr; stdout carries the protocol only.

Warm pool (on by default): a skill script or run_python configuration called
lately keeps containers started ahead of its next calls, as many as its recent
rate of calls asks, within --warm-pool in all (default 4, or the policy's
docker.warm_pool.max), so a model calling a skill in a loop pays a cold
sandbox on its first call only. One not called for --warm-idle keeps none;
--warm-pool 0 turns it off.

Give --skills as an absolute path: hosts start servers in a folder of their
choosing. The server stops when the host closes its stdin, cancelling runs in
flight and removing their sandboxes and warm containers.`,
		Example: `  claude mcp add sandboxrun -- sandboxrun mcp --skills /path/to/skills
  sandboxrun mcp --skills ~/skills --policy /etc/sandboxrun/policy.yaml --audit-log ~/.sandboxrun/audit.jsonl`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := remoteService(g, s, auditLog, ociRuntime, warm)
			if err != nil {
				return err
			}
			defer svc.Close()
			return mcp.ServeStdio(cmd.Context(), svc, s.in, s.out, mcp.WithLogger(g.logger))
		},
	}
	cmd.Flags().StringVar(&auditLog, "audit-log", os.Getenv("SANDBOXRUN_AUDIT_LOG"), "append one JSON line per run or refusal to this file (default $SANDBOXRUN_AUDIT_LOG)")
	warm = addWarmFlags(cmd.Flags())
	cmd.Flags().StringVar(&ociRuntime, "oci-runtime", os.Getenv("SANDBOXRUN_OCI_RUNTIME"), "engine runtime for every sandbox, e.g. runsc (gVisor) (default $SANDBOXRUN_OCI_RUNTIME, else the engine's default)")
	return cmd
}

// remoteService builds the Service for callers who are models: skills by
// name only, from a skills root that must exist (a server that would answer
// every call with "no skills" is a mistake to report at start), with the
// warm pool of warm (nil: none).
func remoteService(g *globals, s streams, auditLog, ociRuntime string, warm *warmFlags) (*sandboxrun.Service, error) {
	var warmMax int
	var warmIdle time.Duration
	if warm != nil {
		var err error
		if warmMax, warmIdle, err = warm.resolve(g.pol); err != nil {
			return nil, err
		}
	}
	roots, err := g.existingRoots()
	if err != nil {
		return nil, err
	}
	var log *audit.Log
	if auditLog != "" {
		if log, err = audit.Open(auditLog); err != nil {
			return nil, withCode(exitEnv, err)
		}
	}
	svc, err := sandboxrun.New(sandboxrun.Config{
		SkillRoots: roots,
		Strict:     g.strict,
		Policy:     g.pol,
		OCIRuntime: ociRuntime,
		Pip:        sandboxrun.PipConfigFromEnv(os.Getenv),
		Audit:      log,
		Logger:     g.logger,
		Progress:   s.err,
		WarmPool:   warmMax,
		WarmIdle:   warmIdle,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the MCP server: %w", err)
	}
	return svc, nil
}
