package sandboxrun

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/layout"
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
	hide := s.hostPaths(sk, ws)
	if err != nil {
		err = rewriteError(hide, err)
	}
	if e == nil {
		return nil, err
	}
	// Composed from the plan's in-sandbox facts: the argv and the command
	// name the skill's files by their sandbox paths (/skills/<name>), the
	// workspace is /workspace, the session is the caller's id.
	r := &RemoteExplanation{
		Skill: e.Skill, Action: actionName(a), Argv: e.Argv, Command: e.Command,
		Limits: e.Limits, Image: e.Image, SkillImage: e.SkillImage, Runner: e.Runner,
		Session: req.Session, WorkspaceWritable: e.WorkspaceWritable,
		WriteGranted: e.WriteGranted, Writable: e.Writable, PolicyDigest: e.PolicyDigest,
		AllowedTools: make([]string, 0, len(e.Tools)),
		Host:         HostCheck{Checked: e.Host.Checked, Reason: e.Host.Reason},
	}
	if e.Workspace != "" {
		r.Workspace = layout.WorkspaceDir
	}
	r.Limits = remoteLimits(hide, e.Limits)
	for _, t := range e.Tools {
		r.AllowedTools = append(r.AllowedTools, t.String())
	}
	return r, err
}

// remoteLimits are l as a remote caller is shown them: where each value
// came from in sandbox terms (a source names the policy file's path), and
// the operator's upstream CA file by what it is, not where it lies.
func remoteLimits(hide *strings.Replacer, l policy.Limits) policy.Limits {
	if len(l.Sources) > 0 {
		src := make(map[string]string, len(l.Sources))
		for k, v := range l.Sources {
			src[k] = hide.Replace(v)
		}
		l.Sources = src
	}
	if l.Egress != nil && l.Egress.UpstreamCA != "" {
		eg := *l.Egress
		eg.UpstreamCA = "operator CA"
		l.Egress = &eg
	}
	return l
}

// Remote is the Execution as a remote caller (the HTTP API, an MCP
// client) is told it, in sandbox terms from the skill and the plan the run
// was decided with: a copy of the Result whose limits name no host file
// (remoteLimits), and the error with its message, and a command denial's
// fields, naming no host folder. The error classifies as Err does; the
// CLI, whose user is the operator, shows Err itself. nil stays nil.
func (x *Execution) Remote() (*sandbox.Result, error) {
	hide := x.hostPaths()
	var res *sandbox.Result
	if x.Result != nil {
		r := *x.Result
		r.Limits = remoteLimits(hide, x.Result.Limits)
		res = &r
	}
	if x.Err == nil {
		return res, nil
	}
	return res, rewriteError(hide, x.Err)
}

// AllowedTools are the skill's allowed-tools with the operator's grants,
// as Activate lists them; nil when the skill did not load.
func (x *Execution) AllowedTools() bashcheck.Tools {
	if x.skill == nil {
		return nil
	}
	return x.svc.withGrants(x.skill, x.skill.Manifest.AllowedTools.ForSkill(x.skill.Refs()))
}

func (x *Execution) hostPaths() *strings.Replacer {
	ws := ""
	if x.plan != nil {
		ws = x.plan.Spec.Workspace
	}
	return x.svc.hostPaths(x.skill, ws)
}

// Stopped is an Execution that stopped before the Service was asked to
// run: a front end's own failure err (a workspace it could not give),
// answered as the Service's are, through Remote.
func (s *Service) Stopped(err error) *Execution { return &Execution{svc: s, Err: err} }

// ActivateRemote is ActivateAs for a remote caller: its error in sandbox
// terms (Execution.Remote), from the skill it loaded.
func (s *Service) ActivateRemote(owner, ref string) (*skill.Activation, error) {
	sk, a, err := s.activate(owner, ref)
	if err != nil {
		return nil, rewriteError(s.hostPaths(sk, ""), err)
	}
	return a, nil
}

// hostPaths replaces the skill's folder (as given and with its links
// resolved) by its mount point, the workspace's host folder by
// /workspace, the skill roots and the sessions root by what they are, and
// the policy file by the words "operator policy". A folder comes before
// the roots that hold it: the replacer takes the first match in this
// order.
func (s *Service) hostPaths(sk *skill.Skill, workspace string) *strings.Replacer {
	var pairs []string
	// add replaces a path in its absolute and link-free forms, then as
	// given when that is relative: a relative name is the operator's too,
	// unless it is one bare word that a message may use for itself
	// ("skills"), which only a file's extension rules out.
	add := func(host, shown string) {
		if host == "" || host == shown {
			return
		}
		abs, err := filepath.Abs(host)
		if err != nil {
			return
		}
		pairs = append(pairs, abs, shown)
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			pairs = append(pairs, real, shown)
		}
		if host != abs && host != "." && host != ".." && strings.ContainsAny(host, "/.") {
			pairs = append(pairs, host, shown)
		}
	}
	if sk != nil {
		add(sk.Dir, policy.SandboxDir(sk.Manifest.Name))
	}
	add(workspace, layout.WorkspaceDir)
	if s.sessions != nil {
		add(s.sessions.Root(), "the sessions folder")
	}
	if s.uploads != nil {
		add(s.uploads.Root(), "the uploaded skills folder")
	}
	for _, root := range s.cfg.SkillRoots {
		add(root, "the skills folder")
	}
	if s.pol != nil && s.pol.Source != "builtin" {
		add(s.pol.Source, "operator policy")
	}
	return strings.NewReplacer(pairs...)
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

// inSandboxError is an error whose message was rewritten for a remote
// caller; what it wraps still decides how it is classified, but the typed
// errors whose fields a front end shows apart from the message (a command
// denial, a skill's load errors) are found (errors.As) rewritten, so that
// their fields say no more than the message.
type inSandboxError struct {
	msg      string
	denied   *policy.DeniedError  // rewritten; nil when err holds none
	parse    *skill.ParseError    // likewise
	manifest *skill.ManifestError // likewise
	err      error
}

func rewriteError(hide *strings.Replacer, err error) error {
	e := &inSandboxError{msg: hide.Replace(err.Error()), err: err}
	var d *policy.DeniedError
	if errors.As(err, &d) {
		e.denied = &policy.DeniedError{Command: hide.Replace(d.Command), Part: hide.Replace(d.Part),
			Reason: hide.Replace(d.Reason), Suggest: hide.Replace(d.Suggest)}
	}
	var pe *skill.ParseError
	if errors.As(err, &pe) {
		e.parse = &skill.ParseError{Path: hide.Replace(pe.Path), Line: pe.Line, Msg: hide.Replace(pe.Msg), Err: pe.Err}
	}
	var me *skill.ManifestError
	if errors.As(err, &me) {
		e.manifest = &skill.ManifestError{Path: hide.Replace(me.Path), Problems: make([]string, len(me.Problems))}
		for i, p := range me.Problems {
			e.manifest.Problems[i] = hide.Replace(p)
		}
	}
	return e
}

func (e *inSandboxError) Error() string { return e.msg }
func (e *inSandboxError) Unwrap() error { return e.err }

// As hands out the rewritten typed errors in place of the ones err holds.
func (e *inSandboxError) As(target any) bool {
	switch t := target.(type) {
	case **policy.DeniedError:
		*t = e.denied
		return e.denied != nil
	case **skill.ParseError:
		*t = e.parse
		return e.parse != nil
	case **skill.ManifestError:
		*t = e.manifest
		return e.manifest != nil
	}
	return false
}
