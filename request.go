package sandboxrun

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/internal/refusal"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// ErrRefused marks every error raised before a sandbox exists: the request
// broke a rule (path, command, arguments, limits, environment) and nothing
// was started. Callers map it to "refused" (the CLI's exit status 2).
var ErrRefused = refusal.Err

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
	// Session names a session of the caller's whose folder is the run's
	// /workspace (writable unless the policy's sessions.write is false;
	// the write cap is the session's quota). It excludes Workspace. Only
	// a Service runs sessions.
	Session string
	// owner is the Caller's (Door.Execute sets it): whose sessions and
	// uploads the request reaches.
	owner string
	// label is the Caller's token label: its share and quotas.
	label string
	// otherReplicas is the Caller's: its sessions on other replicas.
	otherReplicas func() int64
	// Env holds extra variables for the script; reserved names are refused.
	Env map[string]string
	// Timeout, MemoryMiB and CPUs replace the skill's values, up to the
	// policy's ceilings.
	Timeout   time.Duration
	MemoryMiB int64
	CPUs      float64
	// AllowDomains, when not nil, narrows the network to these allowlist
	// entries (egressrule.ParseDomainRule); it never widens what the skill and
	// the policy allow.
	AllowDomains []string
	// Image overrides the image to run (default: the skill's own image when
	// it declares packages, else the runner image, or the runner profile the
	// policy chooses for the skill).
	Image string
	// NoBuild makes a missing skill image an error (ErrNeedsBuild) instead
	// of a build before the run.
	NoBuild bool
	// Stdout and Stderr receive the script's output live when set.
	Stdout io.Writer
	Stderr io.Writer
	// UsageEvery, when not zero, samples the sandbox's resource use that
	// often while the script runs, at least Config.UsageEveryMin apart (a
	// shorter interval is raised to it); Usage receives each sample, and
	// the Result keeps the peaks. A backend that cannot read its
	// sandbox's use (Kubernetes today) sends none.
	UsageEvery time.Duration
	Usage      func(sandbox.Usage)
	// Policy is not read: a Service decides every request with its own
	// policy (Config.Policy), never one a request brings. The field stays
	// so that code setting it still compiles.
	Policy *policy.Operator `json:"-"`

	// lease is the session the Service took for this run.
	lease *session.Lease
}

// MaxCodeBytes bounds the inline code of a RunPython request.
const MaxCodeBytes = plan.MaxCodeBytes

// Action is what a request runs, for Explain: at most one of Script,
// Command and Code (with Python set). None asks about any run of the
// skill, as `policy check` does: argv, arguments and code are not judged.
type Action = plan.Action

// makePlan is the one place a request is decided: the skill, the policy
// (the Service's), the request and the session it took become the plan
// the run executes and the explanation reports. Every error is a refusal.
func (s *Service) makePlan(rs Resolved, a Action, req Request) (*plan.Plan, error) {
	if req.Session != "" && req.lease == nil {
		return nil, refused(errors.New("a session is run through a Service (Service.RunScript and the like)"))
	}
	in := plan.Input{
		Skill: rs.Skill, Policy: rs.Source.Policy(s.pol), RunnerImage: RunnerImage(),
		Action: a,
		Args:   req.Args, Argv: req.Argv, WorkDir: req.WorkDir, Workspace: req.Workspace,
		Env: req.Env, Timeout: req.Timeout, MemoryMiB: req.MemoryMiB, CPUs: req.CPUs,
		AllowDomains: req.AllowDomains, Image: req.Image, DockerHost: os.Getenv("DOCKER_HOST"),
		Stdout: req.Stdout, Stderr: req.Stderr,
		Build: skillimage.BuildInputs{Pip: s.cfg.Pip, Progress: s.cfg.Progress, Version: Version},
	}
	if req.lease != nil {
		in.Session = &plan.Session{Dir: req.lease.Dir, Quota: req.lease.Used + req.lease.Remaining, Facts: req.lease.Facts}
	}
	p, err := plan.Make(in)
	if err != nil {
		return p, refused(err)
	}
	return p, nil
}

// refused marks err as a refusal without changing its message.
func refused(err error) error { return refusal.Mark(err) }
