package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
)

func newMCPCmd(g *globals, s streams) *cobra.Command {
	var auditLog, ociRuntime, sessions, workspace string
	var warm *warmFlags
	cmd := &cobra.Command{
		Use:   "mcp [--skills DIR] [--policy FILE] [--sessions DIR | --workspace DIR] [--audit-log FILE] [--oci-runtime NAME] [--warm-pool N]",
		Short: "Serve the skills and sandboxed runs to an MCP host over stdio",
		Long: `mcp is a Model Context Protocol server on stdin/stdout, for agent hosts
(Claude Code, Claude Desktop, IDEs) to start as a subprocess. It offers the
tools list_skills, activate_skill, run_skill_script, run_skill_command,
run_python, write_file, read_file, list_files, snapshot_workspace,
restore_workspace and list_snapshots, and each skill's files as
resources skill://NAME/PATH.

Every run goes through the same checks as run, exec and python: the operator
policy (--policy), the skill's allowed-tools, a fresh sandbox, the audit log.
The model names skills and files inside them, never host paths. The
connection has a workspace of its own, a session: its folder is every run's
/workspace (writable unless the policy's sessions.write is false), the file
tools put files in and read what runs made, and it is removed when the host
disconnects. It lives under --sessions DIR (default: the policy's
sessions.root, else a private temporary folder removed at exit). Logs go to
stderr; stdout carries the protocol only.

--workspace DIR gives the runs and the file tools a host folder instead (the
project a coding agent works on), shared by every call, and no session is
made. It is checked as run --workspace checks it (/, system folders and the
Docker socket's folder are refused; so is a folder outside the policy's
workspace.roots). The file tools never follow a symlink in it and reach
nothing outside it. write_file may write there only when a policy file says
workspace.write: declared (without one the folder is read-only for the file
tools); with read-only, it is read-only for the file tools and for every run.
A run may write it only when its skill's allowed-tools grant Write, as with
run --workspace. write_file writes straight into the folder: allow it only
for a folder you would let the model edit (.git/hooks included).

Warm pool (on by default): a skill script or run_python configuration called
lately keeps containers started ahead of its next calls, as many as its recent
rate of calls asks, within --warm-pool in all (default 4, or the policy's
docker.warm_pool.max), so a model calling a skill in a loop pays a cold
sandbox on its first call only. One not called for --warm-idle keeps none;
--warm-pool 0 turns it off.

Give --skills and --workspace as absolute paths: hosts start servers in a
folder of their choosing. The server stops when the host closes its stdin,
cancelling runs in flight and removing their sandboxes and warm containers.`,
		Example: `  claude mcp add sandboxrun -- sandboxrun mcp --skills /path/to/skills
  claude mcp add sandboxrun -- sandboxrun mcp --skills /path/to/skills --workspace /path/to/project
  sandboxrun mcp --skills ~/skills --policy /etc/sandboxrun/policy.yaml --audit-log ~/.sandboxrun/audit.jsonl`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var opts []mcp.Option
			if workspace != "" {
				if sessions != "" {
					return usageError("--workspace and --sessions exclude each other: give runs the host folder (--workspace) or a session per connection (--sessions)")
				}
				w, err := hostWorkspace(g, workspace)
				if err != nil {
					return err
				}
				opts = append(opts, w)
			}
			if workspace == "" && sessions == "" && g.pol.Sessions.Root.Value == "" {
				tmp, err := privateSessions()
				if err != nil {
					return withCode(exitEnv, err)
				}
				defer os.RemoveAll(tmp)
				sessions = tmp
			}
			svc, err := remoteService(g, s, auditLog, ociRuntime, sessions, warm)
			if err != nil {
				return err
			}
			defer svc.Close()
			return mcp.ServeStdio(cmd.Context(), svc, s.in, s.out, append(opts, mcp.WithLogger(g.logger))...)
		},
	}
	cmd.Flags().StringVar(&sessions, "sessions", "", "folder for the connection's workspace (default: the policy's sessions.root, else a temporary folder removed at exit)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "host folder for runs (/workspace) and the file tools instead of a session; writable by write_file only when the policy file sets workspace.write: declared, by runs only with Write in the skill's allowed-tools. /, system folders and the Docker socket's folder are refused")
	cmd.Flags().StringVar(&auditLog, "audit-log", os.Getenv("SANDBOXRUN_AUDIT_LOG"), "append one JSON line per run or refusal to this file (default $SANDBOXRUN_AUDIT_LOG)")
	warm = addWarmFlags(cmd.Flags())
	cmd.Flags().StringVar(&ociRuntime, "oci-runtime", os.Getenv("SANDBOXRUN_OCI_RUNTIME"), "engine runtime for every sandbox, e.g. runsc (gVisor) (default $SANDBOXRUN_OCI_RUNTIME, else the engine's default)")
	return cmd
}

// hostWorkspace checks dir as run --workspace does and returns the server
// option that gives it to runs and file tools. write_file may write only
// where a policy file says workspace.write: declared; read-only makes the
// folder read-only for everything the model can call.
func hostWorkspace(g *globals, dir string) (mcp.Option, error) {
	real, err := policy.ResolveWorkspace(dir, os.Getenv("DOCKER_HOST"))
	if err != nil {
		return nil, withCode(exitRefused, err)
	}
	if err := g.pol.CheckWorkspaceRoot(real); err != nil {
		return nil, withCode(exitRefused, err)
	}
	// The model writing into the operator's own folder is a choice the
	// operator writes down: the built-in default does not make it.
	writable := g.pol.Workspace.Write.Set && g.pol.WorkspaceWritable(true)
	return mcp.WithWorkspace(real, writable), nil
}

// remoteService builds the Service for callers who are models: skills by
// name only, from a skills root that must exist (a server that would answer
// every call with "no skills" is a mistake to report at start), with the
// warm pool of warm (nil: none).
func remoteService(g *globals, s streams, auditLog, ociRuntime, sessions string, warm *warmFlags) (*sandboxrun.Service, error) {
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
	log, err := openAudit(auditLog)
	if err != nil {
		return nil, err
	}
	svc, err := sandboxrun.New(sandboxrun.Config{
		SkillRoots:   roots,
		Strict:       g.strict,
		Policy:       g.pol,
		OCIRuntime:   ociRuntime,
		Pip:          pipConfigFromEnv(os.Getenv),
		Audit:        log,
		Logger:       g.logger,
		Progress:     s.err,
		WarmPool:     warmMax,
		WarmIdle:     warmIdle,
		SessionsRoot: sessions,
		Backend:      backends.New,
		Images:       backends.Images(),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the MCP server: %w", err)
	}
	return svc, nil
}

// privateSessions makes a folder for one stdio server's sessions, which
// end with it. Others may traverse it (0711) so that a read-only session
// folder can be mounted for the sandbox user, but not list it.
func privateSessions() (string, error) {
	dir, err := os.MkdirTemp("", "sandboxrun-mcp-")
	if err != nil {
		return "", fmt.Errorf("make a folder for the MCP workspace: %w (set TMPDIR, or pass --sessions DIR)", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil { //nolint:gosec // traversal only, see above
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
