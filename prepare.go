package sandboxrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
	"github.com/sandboxrun/sandboxrun/skill"
)

// ErrRefused marks every error raised before a sandbox exists: the request
// broke a rule (path, command, arguments, limits, environment) and nothing
// was started. Callers map it to "refused" (the CLI's exit status 2).
var ErrRefused = errors.New("refused")

// Request is what a caller asks of one execution. Zero values mean "use the
// skill's or the default value".
type Request struct {
	// Args are the JSON arguments, a JSON object; empty means {}. They
	// reach the script on its stdin.
	Args []byte
	// Argv are command-line arguments for the script (or the inline code),
	// passed to it exactly, one argv entry each, never through a shell.
	// Bounded by policy.CheckArgv. A Bash-tool command carries its own
	// arguments and refuses these.
	Argv []string
	// WorkDir is where the script starts: the workspace (default) or the
	// skill's folder.
	WorkDir policy.WorkDir
	// Workspace is the host directory mounted at /workspace; empty for none.
	Workspace string
	// Session names a session of Owner's whose folder is the run's
	// /workspace (writable unless the policy's sessions.write is false;
	// the write cap is the session's quota). It excludes Workspace. Only
	// a Service runs sessions.
	Session string
	// Owner is who makes the request, for sessions: the digest of the
	// caller's bearer token, or "" when the front end has none.
	Owner string
	// Env holds extra variables for the script; reserved names are refused.
	Env map[string]string
	// Timeout, MemoryMiB and CPUs replace the skill's values, up to the
	// policy's ceilings.
	Timeout   time.Duration
	MemoryMiB int64
	CPUs      float64
	// AllowDomains, when not nil, narrows the network to these allowlist
	// entries (policy.ParseDomainRule); it never widens what the skill and
	// the policy allow.
	AllowDomains []string
	// Image overrides the image to run (default: the skill's own image when
	// it declares packages, else the runner image, or the runner profile the
	// policy chooses for the skill; see RunnerFor).
	Image string
	// NoBuild makes a missing skill image an error (ErrNeedsBuild) instead
	// of a build before the run.
	NoBuild bool
	// Stdout and Stderr receive the script's output live when set.
	Stdout io.Writer
	Stderr io.Writer
	// Policy is the operator's policy; nil means policy.BuiltinPolicy. It
	// is the host's to set, never a remote caller's: a Service replaces it
	// with its own.
	Policy *policy.Operator `json:"-"`

	// lease is the session the Service took for this run.
	lease *session.Lease
}

func (r Request) policy() *policy.Operator {
	if r.Policy != nil {
		return r.Policy
	}
	return policy.BuiltinPolicy()
}

// Prepared is a checked execution, ready for a sandbox.Runner.
type Prepared struct {
	Spec sandbox.Spec
	// Script is the script path relative to the skill folder; empty for
	// commands and inline code.
	Script string
	// Args are the exact bytes the script gets on stdin, for the audit log.
	Args []byte
	// CallerArgv are the caller's command-line arguments, the tail of
	// Spec.Argv, which the audit log records only as a digest.
	CallerArgv []string
	// PolicyDigest identifies the operator policy that decided, for the
	// audit log: the file's sha256, or "builtin".
	PolicyDigest string
}

// PrepareScript checks a request to run one of the skill's scripts: the path
// must resolve inside scripts/, the interpreter must be known, the arguments
// must be a JSON object within bounds.
func PrepareScript(sk *skill.Skill, script string, req Request) (*Prepared, error) {
	s, err := policy.ResolveScript(sk.Dir, sk.Manifest.Name, script)
	if err != nil {
		return nil, refused(err)
	}
	interp, err := policy.Interpreter(sk.Manifest.Runtime, s.HostPath)
	if err != nil {
		return nil, refused(err)
	}
	args, err := policy.ParseArgs(req.Args)
	if err != nil {
		return nil, refused(err)
	}
	argv := append(append([]string{}, interp...), s.SandboxPath)
	p, err := prepare(sk, argv, interp[0], args, req)
	if err != nil {
		return nil, err
	}
	p.Script = s.Rel
	return p, nil
}

// withCallerArgv appends the caller's arguments to a program's argv.
func withCallerArgv(program, caller []string) ([]string, error) {
	if err := policy.CheckArgv(caller); err != nil {
		return nil, refused(err)
	}
	return append(slices.Clone(program), caller...), nil
}

// PrepareCommand checks a command for the Bash-tool path: every simple
// command in it must be allowed by the skill's allowed-tools. The checked
// command then runs under bash inside the sandbox, never on the host.
func PrepareCommand(sk *skill.Skill, command string, req Request) (*Prepared, error) {
	if len(req.Argv) > 0 {
		return nil, refused(fmt.Errorf("%w: a command carries its own arguments; write them into the command", policy.ErrBadArgv))
	}
	command, err := CheckCommand(sk, req.Policy, command)
	if err != nil {
		return nil, err
	}
	args, err := policy.ParseArgs(req.Args)
	if err != nil {
		return nil, refused(err)
	}
	return prepare(sk, policy.BashArgv(command), "bash", args, req)
}

// CheckCommand applies the skill's allowed-tools, plus what the operator's
// policy (nil: built-in) grants it, to a Bash-tool command and returns the
// command that would run. References to the skill's own files, as its
// instructions write them, are resolved first, in the command and in the
// Bash(...) entries alike (see policy.SkillRefs): {baseDir} and
// ${CLAUDE_PLUGIN_ROOT} become the skill's folder in the sandbox, and
// `python scripts/x.py` names the skill's script by its sandbox path. The
// policy then judges exactly the text bash will run. A denial matches
// ErrRefused and, with errors.As, *policy.DeniedError.
func CheckCommand(sk *skill.Skill, pol *policy.Operator, command string) (string, error) {
	refs := sk.Refs()
	command = refs.Resolve(command)
	if err := AllowedTools(sk, pol).ForSkill(refs).CheckCommand(command); err != nil {
		return command, refused(err)
	}
	return command, nil
}

// AllowedTools are the skill's allowed-tools with the policy's grants for it
// added; pol nil means the built-in policy, which grants nothing.
func AllowedTools(sk *skill.Skill, pol *policy.Operator) policy.Tools {
	if pol == nil {
		return sk.Manifest.AllowedTools
	}
	extra := pol.ExtraTools(sk.Manifest.Name)
	if len(extra) == 0 {
		return sk.Manifest.AllowedTools
	}
	return append(append(policy.Tools{}, sk.Manifest.AllowedTools...), extra...)
}

// MaxCodeBytes bounds inline code for PreparePython.
const MaxCodeBytes = 1 << 20

// PreparePython checks model-written Python code to run in the skill's
// sandbox. The code reaches the interpreter on stdin, so its size is not
// bounded by the kernel's argument limits.
func PreparePython(sk *skill.Skill, code []byte, req Request) (*Prepared, error) {
	if len(code) == 0 {
		return nil, refused(errors.New("no code given: pass --code or --file"))
	}
	if len(code) > MaxCodeBytes {
		return nil, refused(fmt.Errorf("code is %d bytes, over the %d-byte limit: move it into a script under scripts/", len(code), MaxCodeBytes))
	}
	return prepare(sk, []string{"python3", "-"}, "python3", code, req)
}

func prepare(sk *skill.Skill, program []string, runtime string, stdin []byte, req Request) (*Prepared, error) {
	argv, err := withCallerArgv(program, req.Argv)
	if err != nil {
		return nil, err
	}
	if err := policy.CheckEnv(req.Env); err != nil {
		return nil, refused(err)
	}
	pol := req.policy()
	limits, err := pol.Decide(sk.Manifest.Name, sk.Limits(), policy.Request{
		Timeout:      req.Timeout,
		MemoryMiB:    req.MemoryMiB,
		CPUs:         req.CPUs,
		AllowDomains: req.AllowDomains,
	})
	if err != nil {
		return nil, refused(err)
	}
	if limits.Egress != nil {
		if err := sandbox.CheckProxyEnv(req.Env); err != nil {
			return nil, refused(err)
		}
	}
	workspace, writable, err := runWorkspace(sk, pol, req)
	if err != nil {
		return nil, err
	}
	if req.lease != nil {
		// The session's files and the run's writes share its quota.
		limits.WorkspaceWriteBytes = req.lease.Used + req.lease.Remaining
	}
	image := req.Image
	if image == "" {
		if image, err = RunnerFor(pol, sk.Manifest.Name); err != nil {
			return nil, err
		}
	}
	spec := sandbox.Spec{
		Skill:             sk.Manifest.Name,
		SkillVersion:      sk.Manifest.Version,
		SkillDir:          sk.Dir,
		Argv:              argv,
		Dir:               req.WorkDir.SandboxPath(sk.Manifest.Name),
		Runtime:           runtime,
		Env:               req.Env,
		Stdin:             stdin,
		Workspace:         workspace,
		WorkspaceWritable: writable,
		Image:             image,
		Limits:            limits,
		Stdout:            req.Stdout,
		Stderr:            req.Stderr,
	}
	return &Prepared{Spec: spec, Args: stdin, CallerArgv: req.Argv, PolicyDigest: pol.Digest}, nil
}

// runWorkspace is the run's /workspace and whether it is writable. A
// session's folder is the caller's own scratch space, made by the Service:
// writable unless the policy's sessions.write says no. A host folder is
// checked (and resolved) as a workspace and writable only when the skill's
// allowed-tools grant Write and the policy lets it.
func runWorkspace(sk *skill.Skill, pol *policy.Operator, req Request) (string, bool, error) {
	if req.Session != "" && req.lease == nil {
		return "", false, refused(errors.New("a session is run through a Service (Service.RunScript and the like)"))
	}
	if req.lease != nil {
		return req.lease.Dir, pol.Sessions.Write.Value, nil
	}
	workspace, err := policy.ResolveWorkspace(req.Workspace, os.Getenv("DOCKER_HOST"))
	if err != nil {
		return "", false, refused(err)
	}
	if err := pol.CheckWorkspaceRoot(workspace); err != nil {
		return "", false, refused(err)
	}
	return workspace, workspace != "" && pol.WorkspaceWritable(AllowedTools(sk, pol).Grants("Write")), nil
}

// refusedError marks err as a refusal without changing its message.
type refusedError struct{ err error }

func (e *refusedError) Error() string        { return e.err.Error() }
func (e *refusedError) Unwrap() error        { return e.err }
func (e *refusedError) Is(target error) bool { return target == ErrRefused }

func refused(err error) error { return &refusedError{err: err} }
