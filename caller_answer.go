package sandboxrun

import (
	"context"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Explain decides req for the skill named skillRef and the action a, as a
// run would, and tells what the run would be, starting nothing (see
// Service.explain). A refusal comes with what was decided before it; the
// Explanation is nil only when the skill itself could not be loaded. A
// remote caller's Explanation speaks of the sandbox's folders: the
// workspace as /workspace, the limits' sources with no host file, and the
// host check's reason without the engine's own words; its error likewise,
// keeping its chain (errors.Is(err, ErrRefused), errors.As for
// *policy.DeniedError).
func (d *Door) Explain(ctx context.Context, skillRef string, a Action, req Request) (*Explanation, error) {
	req.owner = d.c.Owner
	e, sk, err := d.svc.explain(ctx, skillRef, a, req)
	ws := ""
	if e != nil {
		ws = e.Workspace
		e.Action, e.Session = actionName(a), req.Session
		e.AllowedTools = make([]string, 0, len(e.Tools))
		for _, t := range e.Tools {
			e.AllowedTools = append(e.AllowedTools, t.String())
		}
	}
	err = d.answer(sk, ws, err)
	if e == nil || !d.c.Remote {
		return e, err
	}
	names := d.svc.callerNames(sk, ws)
	e.Limits = names.Limits(e.Limits)
	e.Host = HostCheck{Checked: e.Host.Checked, Reason: e.Host.Reason}
	if e.Workspace != "" {
		e.Workspace = layout.WorkspaceDir
	}
	return e, err
}

// Answer is the Result and the error as the caller is told them. A remote
// caller gets them in sandbox terms, from the skill and the plan the run
// was decided with: a copy of the Result whose limits name no host file,
// and the error with its message, and a skill's load errors' fields, told
// through the same names (callerNames); the error classifies as the
// Service's own. A local caller gets the Service's own. nil stays nil.
func (x *Execution) Answer() (*sandbox.Result, error) {
	if !x.remote {
		return x.result, x.err
	}
	ws := ""
	if x.plan != nil {
		ws = x.plan.Spec.Workspace
	}
	names := x.svc.callerNames(x.skill, ws)
	var res *sandbox.Result
	if x.result != nil {
		r := *x.result
		r.Limits = names.Limits(x.result.Limits)
		if r.Cause != nil {
			r.Error = names.Say(r.Error, where.Render(r.Cause, names.Name))
		}
		res = &r
	}
	if x.err == nil {
		return res, nil
	}
	return res, names.Err(x.err)
}

// AllowedTools are the skill's allowed-tools with the operator's grants,
// as Activate lists them; nil when the skill did not load.
func (x *Execution) AllowedTools() bashcheck.Tools {
	if x.skill == nil {
		return nil
	}
	return x.svc.withGrants(x.skill, x.source, x.skill.Manifest.AllowedTools.ForSkill(x.skill.Refs()))
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
