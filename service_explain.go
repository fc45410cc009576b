package sandboxrun

import (
	"context"

	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Explanation is what a request would do, decided exactly as its run
// would decide it (one plan serves both), without running anything, as
// its caller is told it (Door.Explain).
type Explanation struct {
	// Skill is the skill's name.
	Skill string `json:"skill"`
	// Action is script, command or python.
	Action string `json:"action"`
	// Argv is what the sandbox would execute; empty when the Action named
	// nothing to run.
	Argv []string `json:"argv,omitempty"`
	// Command is a Bash-tool command as it was judged: the skill's own
	// references resolved.
	Command string `json:"command,omitempty"`
	// Limits are the run's limits after defaults and ceilings, with the
	// network and egress allowlist; zero when the request is refused
	// before they are decided.
	Limits policy.Limits `json:"limits"`
	// Image is the image the sandbox starts in. For a skill that declares
	// packages it is empty and SkillImage is set: the skill image's tag
	// is taken from the id of Runner in the engine when the run starts.
	Image      string `json:"image,omitempty"`
	SkillImage bool   `json:"skill_image"`
	// Runner is the runner, or the runner profile the policy picks, the
	// skill runs in or has its image built on.
	Runner string `json:"runner"`
	// Workspace is the host folder mounted at /workspace ("" for none),
	// told a remote caller as /workspace; Session names the session the
	// request named. WorkspaceWritable says whether the run may write it.
	Workspace         string `json:"workspace,omitempty"`
	Session           string `json:"session,omitempty"`
	WorkspaceWritable bool   `json:"workspace_writable"`
	// WriteGranted: the allowed-tools (with grants) grant Write. Writable:
	// a workspace would be writable under the policy.
	WriteGranted bool `json:"write_granted"`
	Writable     bool `json:"writable"`
	// Tools are the skill's allowed-tools with the policy's grants;
	// AllowedTools the same as text.
	Tools        bashcheck.Tools `json:"-"`
	AllowedTools []string        `json:"allowed_tools"`
	// PolicyDigest identifies the policy that decided.
	PolicyDigest string `json:"policy_digest"`
	// Host says whether the limits were held against the backend's host.
	Host HostCheck `json:"host"`
}

// explain decides req for the skill named skillRef and the action a, as
// a run would, and tells what the run would be, starting nothing, with the
// skill it loaded (nil when none loaded), so that a remote answer is put in
// sandbox terms without loading it again. When the policy allows the run,
// the backend is asked about its host as the run would ask it
// (Explanation.Host says whether it could be). A refusal is returned as the
// run would return it (matching ErrRefused, or sandbox.ErrBeyondHost for
// more than the host offers), together with what was decided before it. A
// session named in req is taken for the moment, as a run would take it
// (waiting for a run in it to end).
func (s *Service) explain(ctx context.Context, skillRef string, a Action, req Request) (*Explanation, *skill.Skill, error) {
	_, release, err := s.sessionRun(ctx, &req)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	rs, err := s.ResolveSkill(req.owner, skillRef)
	if err != nil {
		return nil, nil, err
	}
	sk := rs.Skill
	p, err := s.planRun(rs, a, req)
	if p == nil {
		return nil, sk, err
	}
	e := explanation(p)
	if err != nil {
		e.Host.Reason = hostNotReached
		return e, sk, err
	}
	e.Host, err = s.checkHost(ctx, p.Spec)
	return e, sk, err
}

func explanation(p *plan.Plan) *Explanation {
	return &Explanation{
		Skill:             p.Spec.Skill,
		Argv:              p.Spec.Argv,
		Command:           p.Command,
		Limits:            p.Spec.Limits,
		Image:             p.Spec.Image,
		SkillImage:        p.SkillImage != nil,
		Runner:            p.Runner,
		Workspace:         p.Spec.Workspace,
		WorkspaceWritable: p.Spec.WorkspaceWritable,
		WriteGranted:      p.WriteGranted,
		Writable:          p.Writable,
		Tools:             p.Tools,
		PolicyDigest:      p.PolicyDigest,
	}
}
