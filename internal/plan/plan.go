package plan

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// MaxCodeBytes bounds inline code (a run-Python request).
const MaxCodeBytes = 1 << 20

// Action is what a request runs: at most one of Script, Command and Code.
// None of them asks about any run of the skill (`policy check`): argv,
// arguments and code are then not judged.
type Action struct {
	// Script is one of the skill's scripts, as the caller named it.
	Script string
	// Command is a Bash-tool command line.
	Command string
	// Code is inline Python, given to python3 on stdin.
	Code []byte
	// Python marks a run-Python request (Code empty is then refused).
	Python bool
}

// Session is the session folder a request's /workspace is, with its quota.
type Session struct {
	Dir string
	// Quota is the session's byte cap: what it holds plus what it may
	// still take, shared by its files and the run's writes.
	Quota int64
	// Facts are what the store vouches for the folder's files (their
	// exact bytes, one owner), given to a writable run's Spec so that
	// its view is not measured by a walk; nil when it vouches nothing.
	Facts *sandbox.WorkspaceFacts
}

// Input is one request, with everything the plan depends on.
type Input struct {
	Skill  *skill.Skill
	Policy *policy.Operator // never nil
	// RunnerImage is the runner image; profiles are tagged from it.
	RunnerImage string
	Action      Action

	Args         []byte
	Argv         []string
	WorkDir      policy.WorkDir
	Workspace    string   // a host folder; excludes Session
	Session      *Session // nil: none
	Env          map[string]string
	Timeout      time.Duration
	MemoryMiB    int64
	CPUs         float64
	AllowDomains []string
	// Image is the caller's image, which replaces the plan's choice.
	Image string
	// DockerHost is $DOCKER_HOST, which decides whether a workspace on
	// this host can be mounted at all.
	DockerHost     string
	Stdout, Stderr io.Writer
	// Build goes into a skill image's build options.
	Build skillimage.BuildInputs
}

// Plan is what a request will do. Spec is the sandbox's, complete but for
// the image when SkillImage is set: that image's tag depends on the
// runner's id in the engine, so the run looks it up (and builds a missing
// image) on SkillImage.Runner.
type Plan struct {
	Spec sandbox.Spec
	// SkillDigest is the digest of the skill's content (skillstore.Digest),
	// set by whoever resolved the skill.
	SkillDigest string
	// Script is the script path relative to the skill folder; empty for
	// commands and inline code.
	Script string
	// Command is the Bash-tool command as judged: the skill's own
	// references resolved ({baseDir}, scripts/x.py).
	Command string
	// Args are the exact bytes the script gets on stdin.
	Args []byte
	// CallerArgv are the caller's arguments, the tail of Spec.Argv.
	CallerArgv []string
	// PolicyDigest identifies the policy that decided.
	PolicyDigest string
	// Runner is the image the skill runs in without packages, and the one
	// its skill image is built on: the runner or the profile the policy
	// picks for it.
	Runner string
	// SkillImage is set when the skill (with the policy's grants)
	// declares packages and the caller named no image.
	SkillImage *images.SkillOptions
	// Tools are the skill's allowed-tools with the policy's grants, the
	// skill's own references in them resolved (bashcheck.Tools.ForSkill).
	Tools bashcheck.Tools
	// WriteGranted: the allowed-tools grant Write. Writable: a workspace
	// would be writable (a session's per the policy's sessions.write, a
	// host folder's when Write is granted and the policy lets it).
	WriteGranted, Writable bool
}

// Make computes the plan of in. Every error is a refusal: the request
// broke a rule and nothing may start. The plan returned with an error
// holds what was decided before it (the skill, the command as judged,
// tools, runner), for an explanation.
func Make(in Input) (*Plan, error) {
	sk, pol := in.Skill, in.Policy
	name := sk.Manifest.Name
	p := &Plan{PolicyDigest: pol.Digest, Tools: Tools(sk, pol).ForSkill(sk.Refs()), CallerArgv: in.Argv}
	p.Spec = sandbox.Spec{
		Skill: name, SkillVersion: sk.Manifest.Version, SkillDir: sk.Dir,
		Dir: in.WorkDir.SandboxPath(name), Env: in.Env, Stdout: in.Stdout, Stderr: in.Stderr,
	}
	p.WriteGranted = p.Tools.Grants("Write")
	p.Writable = pol.WorkspaceWritable(p.WriteGranted)
	if in.Session != nil {
		p.Writable = pol.Sessions.Write.Value
	}
	runner, err := skillimage.Runner(pol, in.RunnerImage, name)
	if err != nil {
		return p, err
	}
	p.Runner = runner
	if err := p.program(in); err != nil {
		return p, err
	}
	if err := policy.CheckEnv(in.Env); err != nil {
		return p, err
	}
	limits, err := pol.Decide(name, sk.Limits(), policy.Request{
		Timeout: in.Timeout, MemoryMiB: in.MemoryMiB, CPUs: in.CPUs, AllowDomains: in.AllowDomains,
	})
	if err != nil {
		return p, err
	}
	if limits.Egress != nil {
		if err := sandbox.CheckProxyEnv(in.Env); err != nil {
			return p, err
		}
		// The proxy puts each granted secret's placeholder in its variable;
		// the operator decides what it holds, not the caller.
		for _, s := range limits.Egress.Secrets {
			if _, ok := in.Env[s.Name]; ok {
				return p, fmt.Errorf("env sets %s, which is a secret the egress proxy adds for this skill: remove it from the request", s.Name)
			}
		}
	}
	if err := p.workspace(in); err != nil {
		return p, err
	}
	if in.Session != nil {
		// The session's files and the run's writes share its quota.
		limits.WorkspaceWriteBytes = in.Session.Quota
	}
	p.Spec.Limits = limits
	return p, p.image(in)
}

// program sets the argv, the runtime and stdin of the action.
func (p *Plan) program(in Input) error {
	sk, a := in.Skill, in.Action
	var program []string
	switch {
	case a.Script != "":
		s, err := policy.ResolveScript(sk.Dir, sk.Manifest.Name, a.Script)
		if err != nil {
			return err
		}
		interp, err := policy.Interpreter(sk.Manifest.Runtime, s.HostPath)
		if err != nil {
			return err
		}
		if p.Args, err = policy.ParseArgs(in.Args); err != nil {
			return err
		}
		program, p.Spec.Runtime, p.Script = append(slices.Clone(interp), s.SandboxPath), interp[0], s.Rel
	case a.Command != "":
		if len(in.Argv) > 0 {
			return fmt.Errorf("%w: a command carries its own arguments; write them into the command", policy.ErrBadArgv)
		}
		p.Command = sk.Refs().Resolve(a.Command)
		if err := p.Tools.CheckCommand(p.Command); err != nil {
			return err
		}
		var err error
		if p.Args, err = policy.ParseArgs(in.Args); err != nil {
			return err
		}
		program, p.Spec.Runtime = bashcheck.BashArgv(p.Command), "bash"
	case a.Python:
		if len(a.Code) == 0 {
			return errors.New("no code given: pass --code or --file")
		}
		if len(a.Code) > MaxCodeBytes {
			return fmt.Errorf("code is %d bytes, over the %d-byte limit: move it into a script under scripts/", len(a.Code), MaxCodeBytes)
		}
		program, p.Spec.Runtime, p.Args = []string{"python3", "-"}, "python3", a.Code
	default:
		return nil // any run of the skill: no program to judge
	}
	if err := policy.CheckArgv(in.Argv); err != nil {
		return err
	}
	p.Spec.Argv = append(program, in.Argv...)
	p.Spec.Stdin = p.Args
	return nil
}

// workspace sets the run's /workspace and whether it is writable. A
// session's folder is the caller's scratch space; a host folder is checked
// (and resolved) as a workspace.
func (p *Plan) workspace(in Input) error {
	if in.Session != nil {
		p.Spec.Workspace, p.Spec.WorkspaceWritable = in.Session.Dir, p.Writable
		if p.Writable {
			p.Spec.WorkspaceFacts = in.Session.Facts
		}
		return nil
	}
	ws, err := policy.ResolveWorkspace(in.Workspace, in.DockerHost)
	if err != nil {
		return err
	}
	if err := in.Policy.CheckWorkspaceRoot(ws); err != nil {
		return err
	}
	p.Spec.Workspace, p.Spec.WorkspaceWritable = ws, ws != "" && p.Writable
	return nil
}

// image decides where the sandbox starts: the caller's image, else the
// skill's own when it declares packages (SkillImage), else the runner.
func (p *Plan) image(in Input) error {
	if in.Image != "" {
		p.Spec.Image = in.Image
		return nil
	}
	opts, err := skillimage.ImageOptions(in.Skill, in.Policy, p.Runner, in.Build)
	switch {
	case errors.Is(err, skillimage.ErrNoDependencies):
		p.Spec.Image = p.Runner
		return nil
	case err != nil:
		return err
	}
	p.SkillImage = &opts
	return nil
}

// Tools are the skill's allowed-tools with the policy's grants for it.
func Tools(sk *skill.Skill, pol *policy.Operator) bashcheck.Tools {
	extra := pol.ExtraTools(sk.Manifest.Name)
	if len(extra) == 0 {
		return sk.Manifest.AllowedTools
	}
	return append(append(bashcheck.Tools{}, sk.Manifest.AllowedTools...), extra...)
}
