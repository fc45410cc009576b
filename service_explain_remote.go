package sandboxrun

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/policy"
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
}

// ExplainRemote is Explain for a remote caller: the answer and the error's
// message speak of paths inside the sandbox. The error keeps its chain
// (errors.Is(err, ErrRefused), errors.As for *policy.DeniedError), and a
// refusal comes with what was decided before it, as Explain's does.
func (s *Service) ExplainRemote(ctx context.Context, skillRef string, a Action, req Request) (*RemoteExplanation, error) {
	e, sk, err := s.explain(ctx, skillRef, a, req)
	hide := s.hostPaths(sk, e)
	if err != nil {
		err = rewriteError(hide, err)
	}
	if e == nil {
		return nil, err
	}
	r := &RemoteExplanation{
		Skill: e.Skill, Action: actionName(a), Command: hide.Replace(e.Command),
		Limits: e.Limits, Image: e.Image, SkillImage: e.SkillImage, Runner: e.Runner,
		Session: req.Session, WorkspaceWritable: e.WorkspaceWritable,
		WriteGranted: e.WriteGranted, Writable: e.Writable, PolicyDigest: e.PolicyDigest,
		AllowedTools: make([]string, 0, len(e.Tools)),
	}
	for _, arg := range e.Argv {
		r.Argv = append(r.Argv, hide.Replace(arg))
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

// InSandboxResult is res as a remote caller is shown it: a copy whose
// limits speak in sandbox terms (remoteLimits). nil stays nil.
func (s *Service) InSandboxResult(skillRef string, res *sandbox.Result) *sandbox.Result {
	if res == nil {
		return nil
	}
	out := *res
	out.Limits = remoteLimits(s.hostPaths(s.skillOrNil(skillRef), nil), res.Limits)
	return &out
}

// InSandboxTerms rewrites in msg the host folders a request about the
// skill may name (the skill's folder, the skill roots, the sessions root,
// the policy file) as a remote caller knows them.
func (s *Service) InSandboxTerms(skillRef, msg string) string {
	return s.hostPaths(s.skillOrNil(skillRef), nil).Replace(msg)
}

// InSandboxError is err as a remote caller (the HTTP API, an MCP client)
// is told it: its message, and a command denial's fields, in sandbox terms
// (InSandboxTerms). It classifies as err does; the CLI, whose user is the
// operator, shows err itself. nil stays nil.
func (s *Service) InSandboxError(skillRef string, err error) error {
	if err == nil {
		return nil
	}
	return rewriteError(s.hostPaths(s.skillOrNil(skillRef), nil), err)
}

// skillOrNil loads the skill a front end names again, to put its answer in
// sandbox terms; nil when it does not load (its folder is then not named
// to hide). ExplainRemote carries the one it loaded instead.
func (s *Service) skillOrNil(ref string) *skill.Skill {
	sk, err := s.Skill(ref)
	if err != nil {
		return nil
	}
	return sk
}

// hostPaths replaces the skill's folder (as given and with its links
// resolved) by its mount point, the workspace's host folder by
// /workspace, the skill roots and the sessions root by what they are, and
// the policy file by the words "operator policy". A folder comes before
// the roots that hold it: the replacer takes the first match in this
// order.
func (s *Service) hostPaths(sk *skill.Skill, e *Explanation) *strings.Replacer {
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
	if e != nil {
		add(e.Workspace, layout.WorkspaceDir)
	}
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
// caller; what it wraps still decides how it is classified, but a command
// denial is found (errors.As) as rewritten, so that its fields, which a
// front end shows apart from the message, say no more than the message.
type inSandboxError struct {
	msg    string
	denied *policy.DeniedError // rewritten; nil when err holds none
	err    error
}

func rewriteError(hide *strings.Replacer, err error) error {
	e := &inSandboxError{msg: hide.Replace(err.Error()), err: err}
	var d *policy.DeniedError
	if errors.As(err, &d) {
		e.denied = &policy.DeniedError{Command: hide.Replace(d.Command), Part: hide.Replace(d.Part),
			Reason: hide.Replace(d.Reason), Suggest: hide.Replace(d.Suggest)}
	}
	return e
}

func (e *inSandboxError) Error() string { return e.msg }
func (e *inSandboxError) Unwrap() error { return e.err }

// As hands out the rewritten denial in place of the one err holds.
func (e *inSandboxError) As(target any) bool {
	t, ok := target.(**policy.DeniedError)
	if ok && e.denied != nil {
		*t = e.denied
		return true
	}
	return false
}
