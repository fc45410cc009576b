package sandboxrun

import (
	"context"

	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Explanation is what a request would do, decided exactly as its run
// would decide it (one plan serves both), without running anything.
type Explanation struct {
	// Skill is the skill's name.
	Skill string `json:"skill"`
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
	SkillImage bool   `json:"skill_image,omitempty"`
	// Runner is the runner, or the runner profile the policy picks, the
	// skill runs in or has its image built on.
	Runner string `json:"runner"`
	// Workspace is the host folder mounted at /workspace ("" for none)
	// and WorkspaceWritable whether the run may write it.
	Workspace         string `json:"workspace,omitempty"`
	WorkspaceWritable bool   `json:"workspace_writable"`
	// WriteGranted: the allowed-tools (with grants) grant Write. Writable:
	// a workspace would be writable under the policy.
	WriteGranted bool `json:"write_granted"`
	Writable     bool `json:"writable"`
	// Tools are the skill's allowed-tools with the policy's grants.
	Tools bashcheck.Tools `json:"-"`
	// PolicyDigest identifies the policy that decided.
	PolicyDigest string `json:"policy_digest"`
	// Host says whether the limits were held against the backend's host.
	Host HostCheck `json:"host"`
}

// Explain decides req for the skill named skillRef and the action a, as
// RunScript, RunCommand or RunPython would, and tells what the run would
// be, starting nothing. When the policy allows the run, the backend is
// asked about its host as the run would ask it (Explanation.Host says
// whether it could be). A refusal is returned as the run would return it
// (matching ErrRefused, or sandbox.ErrBeyondHost for more than the host
// offers), together with what was decided before it; the Explanation is
// nil only when the skill itself could not be loaded. A session named in req is taken for the moment, as
// a run would take it (waiting for a run in it to end).
func (s *Service) Explain(ctx context.Context, skillRef string, a Action, req Request) (*Explanation, error) {
	e, _, err := s.explain(ctx, skillRef, a, req)
	return e, err
}

// explain is Explain with the skill it loaded (nil when none loaded), so
// that a remote answer is put in sandbox terms without loading it again.
func (s *Service) explain(ctx context.Context, skillRef string, a Action, req Request) (*Explanation, *skill.Skill, error) {
	_, release, err := s.sessionRun(ctx, &req)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	rs, err := s.ResolveSkill(req.Owner, skillRef)
	if err != nil {
		return nil, nil, err
	}
	sk := rs.Skill
	p, err := s.planRun(sk, a, req)
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
