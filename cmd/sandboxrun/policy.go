package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func newPolicyCmd(g *globals, s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy (show | check SKILL...)",
		Short: "Show the operator policy, or what it does to skills",
		Long: `The operator policy (--policy FILE, else $SANDBOXRUN_POLICY, else
/etc/sandboxrun/policy.yaml when it exists, else built in) sets defaults and
ceilings for limits, the network, the workspace, the runtime, build settings
and per-skill grants. A skill's values are requests judged against it.`,
	}
	cmd.AddCommand(newPolicyShowCmd(g, s), newPolicyCheckCmd(g, s))
	return cmd
}

func newPolicyShowCmd(g *globals, s streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [--json]",
		Short: "Print the effective policy and where each value came from",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			if asJSON {
				return writeJSON(s.out, struct {
					Source   string         `json:"source"`
					Digest   string         `json:"digest"`
					Settings []policy.Entry `json:"settings"`
				}{g.pol.Source, g.pol.Digest, g.pol.Entries()})
			}
			fmt.Fprintf(s.out, "policy: %s (sha256 %s)\n", g.pol.Source, g.pol.Digest)
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			for _, e := range g.pol.Entries() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Value, e.From)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {source, digest, settings: [{key, value, from}]}")
	return cmd
}

// skillCheck is what the policy does to one skill.
type skillCheck struct {
	Skill          string         `json:"skill"`
	Allowed        bool           `json:"allowed"`
	Error          string         `json:"error,omitempty"`
	Limits         *policy.Limits `json:"limits,omitempty"`
	Workspace      string         `json:"workspace"`
	AllowedTools   string         `json:"allowed_tools"`
	GrantedTools   string         `json:"granted_tools,omitempty"`
	SystemPackages []string       `json:"granted_system_packages,omitempty"`
	PythonPackages []string       `json:"granted_python_packages,omitempty"`
	// Runner is the image the skill starts from: the runner or the runner
	// profile the policy picks.
	Runner string `json:"runner"`
	// Host says whether the engine's host was asked, as the run would ask.
	Host sandboxrun.HostCheck `json:"host"`
}

func newPolicyCheckCmd(g *globals, s streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [--json] SKILL...",
		Short: "Show what the policy does to skills: limits after ceilings, network, workspace, grants",
		Long: `check judges each skill together with the operator policy, as a run would
with no --timeout/--memory/--cpus: the limits after defaults and ceilings (and
which were clamped), network, workspace mode, the allowed-tools with the
policy's grants, and granted packages. 'validate' judges a skill alone.

Exit status: 0 when every skill can run under the policy, 1 when a run of
some skill would be refused (e.g. a limit above a ceiling with on_exceed:
refuse), 2 on usage errors.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("check takes one or more SKILLs; see '%s --help'", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := g.skillService()
			if err != nil {
				return err
			}
			defer svc.Close()
			var checks []skillCheck
			failed := false
			for _, ref := range args {
				// A run with no flags, as the Service would plan it.
				e, err := svc.Explain(cmd.Context(), ref, sandboxrun.Action{}, sandboxrun.Request{})
				if e == nil {
					return err
				}
				c := checkSkill(g.pol, e, err)
				failed = failed || !c.Allowed
				checks = append(checks, c)
			}
			if asJSON {
				if err := writeJSON(s.out, checks); err != nil {
					return withCode(exitEnv, err)
				}
			} else {
				for _, c := range checks {
					printCheck(s, c)
				}
			}
			if failed {
				return silentExit(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print [{skill, allowed, error, limits, workspace, allowed_tools, ...}]")
	return cmd
}

// checkSkill shapes the explanation of a run of the skill, and the
// refusal the run would meet (err), for `policy check`.
func checkSkill(pol *policy.Operator, e *sandboxrun.Explanation, err error) skillCheck {
	name := e.Skill
	c := skillCheck{Skill: name, Allowed: true, AllowedTools: e.Tools.String(), GrantedTools: pol.ExtraTools(name).String()}
	c.Runner, c.Host = e.Runner, hostView(e.Host)
	c.SystemPackages, c.PythonPackages = pol.ExtraPackages(name)
	if err != nil {
		c.Allowed, c.Error = false, err.Error()
		if !errors.Is(err, policy.ErrLimit) && !errors.Is(err, sandbox.ErrBeyondHost) {
			c.Error = "skill: " + c.Error
		}
	} else {
		l := e.Limits
		c.Limits = &l
	}
	switch {
	case !e.WriteGranted:
		c.Workspace = "read-only"
	case e.Writable:
		c.Workspace = "writable (allowed-tools grants Write)"
	default:
		c.Workspace = "read-only (Write is granted but the policy's workspace.write is read-only)"
	}
	return c
}

func printCheck(s streams, c skillCheck) {
	fmt.Fprintf(s.out, "%s:\n", c.Skill)
	if !c.Allowed {
		fmt.Fprintf(s.out, "  REFUSED: %s\n", c.Error)
	}
	if l := c.Limits; l != nil {
		tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  timeout\t%gs\t%s\n", l.TimeoutSec, l.Sources["timeout"])
		fmt.Fprintf(tw, "  memory\t%s\t%s\n", size.Format(l.MemoryBytes), l.Sources["memory"])
		fmt.Fprintf(tw, "  cpus\t%g\t%s\n", l.CPUs, l.Sources["cpus"])
		fmt.Fprintf(tw, "  pids\t%d\t%s\n", l.Pids, l.Sources["pids"])
		network := fmt.Sprint(l.Network)
		if l.Egress != nil {
			network = egressLine(l.Egress)
		}
		fmt.Fprintf(tw, "  network\t%s\t%s\n", network, l.Sources["network"])
		if src, ok := l.Sources["secrets"]; ok {
			granted := 0
			if l.Egress != nil {
				granted = len(l.Egress.Secrets)
			}
			fmt.Fprintf(tw, "  secrets\t%d granted, %d withheld\t%s\n", granted, len(l.SecretsWithheld), src)
		}
		_ = tw.Flush()
		if len(l.Clamped) > 0 {
			fmt.Fprintf(s.out, "  clamped to the policy's ceilings: %v\n", l.Clamped)
		}
	}
	fmt.Fprintf(s.out, "  runner: %s\n", c.Runner)
	fmt.Fprintf(s.out, "  host: %s\n", hostLine(c.Host))
	if c.Host.Isolation != "" {
		fmt.Fprintf(s.out, "  network isolation: %s\n", c.Host.Isolation)
	}
	fmt.Fprintf(s.out, "  workspace: %s\n", c.Workspace)
	fmt.Fprintf(s.out, "  allowed-tools: %s\n", orNone(c.AllowedTools))
	if c.GrantedTools != "" {
		fmt.Fprintf(s.out, "  granted by the policy: %s\n", c.GrantedTools)
	}
	if len(c.SystemPackages)+len(c.PythonPackages) > 0 {
		fmt.Fprintf(s.out, "  granted packages: system %v, python %v\n", c.SystemPackages, c.PythonPackages)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// hostView is h as the operator is shown it: why the engine could not be
// asked is part of the reason.
func hostView(h sandboxrun.HostCheck) sandboxrun.HostCheck {
	if h.Err != nil {
		h.Reason += " (" + h.Err.Error() + ")"
	}
	return h
}

// hostLine says in one line whether the engine's host was asked.
func hostLine(h sandboxrun.HostCheck) string {
	if h.Checked {
		return "checked against the engine's host (CPUs, memory, runtimes)"
	}
	return h.Reason
}
