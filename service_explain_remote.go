package sandboxrun

import (
	"context"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// RemoteExplanation is an Explanation as a caller across the network (the
// HTTP API, an MCP client) sees it: folders as the sandbox mounts them and
// the session's id, never a folder of the host or the policy file's path.
// Those are the operator's, and the caller could not use them anyway.
type RemoteExplanation struct {
	Skill string `json:"skill"`
	// Action is script, command or python.
	Action  string   `json:"action"`
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"`
	// Limits are decided (zero when the refusal came before them); their
	// Sources name the policy file as "operator policy".
	Limits     policy.Limits `json:"limits"`
	Image      string        `json:"image,omitempty"`
	SkillImage bool          `json:"skill_image"`
	Runner     string        `json:"runner"`
	// Workspace is /workspace when the run gets a session's folder there;
	// Session names the session.
	Workspace         string   `json:"workspace,omitempty"`
	Session           string   `json:"session,omitempty"`
	WorkspaceWritable bool     `json:"workspace_writable"`
	WriteGranted      bool     `json:"write_granted"`
	Writable          bool     `json:"writable"`
	AllowedTools      []string `json:"allowed_tools"`
	PolicyDigest      string   `json:"policy_digest"`
	// Host says whether the limits were held against the backend's host;
	// why the engine could not be asked is the operator's to read.
	Host HostCheck `json:"host"`
}

// ExplainRemote is Explain for a remote caller: the answer and the error's
// message speak of paths inside the sandbox. The error keeps its chain
// (errors.Is(err, ErrRefused), errors.As for *policy.DeniedError), and a
// refusal comes with what was decided before it, as Explain's does.
func (s *Service) ExplainRemote(ctx context.Context, skillRef string, a Action, req Request) (*RemoteExplanation, error) {
	e, sk, err := s.explain(ctx, skillRef, a, req)
	ws := ""
	if e != nil {
		ws = e.Workspace
	}
	names := s.callerNames(sk, ws)
	if err != nil {
		err = names.tell(err)
	}
	if e == nil {
		return nil, err
	}
	// Composed from the plan's in-sandbox facts: the argv and the command
	// name the skill's files by their sandbox paths (/skills/<name>), the
	// workspace is /workspace, the session is the caller's id.
	r := &RemoteExplanation{
		Skill: e.Skill, Action: actionName(a), Argv: e.Argv, Command: e.Command,
		Image: e.Image, SkillImage: e.SkillImage, Runner: e.Runner,
		Session: req.Session, WorkspaceWritable: e.WorkspaceWritable,
		WriteGranted: e.WriteGranted, Writable: e.Writable, PolicyDigest: e.PolicyDigest,
		AllowedTools: make([]string, 0, len(e.Tools)),
		Host:         HostCheck{Checked: e.Host.Checked, Reason: e.Host.Reason},
		Limits:       names.limits(e.Limits),
	}
	if e.Workspace != "" {
		r.Workspace = layout.WorkspaceDir
	}
	for _, t := range e.Tools {
		r.AllowedTools = append(r.AllowedTools, t.String())
	}
	return r, err
}

// Remote is the Execution as a remote caller (the HTTP API, an MCP
// client) is told it, in sandbox terms from the skill and the plan the run
// was decided with: a copy of the Result whose limits name no host file,
// and the error with its message, and a skill's load errors' fields, told
// through the same names (callerNames). The error classifies as Err does;
// the CLI, whose user is the operator, shows Err itself. nil stays nil.
func (x *Execution) Remote() (*sandbox.Result, error) {
	ws := ""
	if x.plan != nil {
		ws = x.plan.Spec.Workspace
	}
	names := x.svc.callerNames(x.skill, ws)
	var res *sandbox.Result
	if x.Result != nil {
		r := *x.Result
		r.Limits = names.limits(x.Result.Limits)
		if r.Cause != nil {
			r.Error = names.say(r.Error, where.Render(r.Cause, names.name))
		}
		res = &r
	}
	if x.Err == nil {
		return res, nil
	}
	return res, names.tell(x.Err)
}

// AllowedTools are the skill's allowed-tools with the operator's grants,
// as Activate lists them; nil when the skill did not load.
func (x *Execution) AllowedTools() bashcheck.Tools {
	if x.skill == nil {
		return nil
	}
	return x.svc.withGrants(x.skill, x.skill.Manifest.AllowedTools.ForSkill(x.skill.Refs()))
}

// Stopped is an Execution that stopped before the Service was asked to
// run: a front end's own failure err (a workspace it could not give),
// answered as the Service's are, through Remote.
func (s *Service) Stopped(err error) *Execution { return &Execution{svc: s, Err: err} }

// Tell is err, from no skill's run (a session's file, an upload), as a
// remote caller is told it (Execution.Remote). nil stays nil.
func (s *Service) Tell(err error) error {
	if err == nil {
		return nil
	}
	return s.callerNames(nil, "").tell(err)
}

// ActivateRemote is ActivateAs for a remote caller: its error in sandbox
// terms (Execution.Remote), from the skill it loaded.
func (s *Service) ActivateRemote(owner, ref string) (*skill.Activation, error) {
	sk, a, err := s.activate(owner, ref)
	if err != nil {
		return nil, s.callerNames(sk, "").tell(err)
	}
	return a, nil
}

func actionName(a Action) string {
	switch {
	case a.Command != "":
		return "command"
	case a.Python || a.Code != nil:
		return "python"
	default:
		return "script"
	}
}
