package sandboxrun

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/policy"
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
	e, err := s.Explain(ctx, skillRef, a, req)
	hide := s.hostPaths(skillRef, e)
	if err != nil {
		err = &inSandboxError{msg: hide.Replace(err.Error()), err: err}
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
		r.Workspace = policy.SandboxWorkspace
	}
	if len(e.Limits.Sources) > 0 {
		r.Limits.Sources = make(map[string]string, len(e.Limits.Sources))
		for k, v := range e.Limits.Sources {
			r.Limits.Sources[k] = hide.Replace(v)
		}
	}
	for _, t := range e.Tools {
		r.AllowedTools = append(r.AllowedTools, t.String())
	}
	return r, err
}

// InSandboxTerms rewrites in msg the host folders a request about the
// skill may name (the skill's folder, the policy file) as a remote caller
// knows them.
func (s *Service) InSandboxTerms(skillRef, msg string) string {
	return s.hostPaths(skillRef, nil).Replace(msg)
}

// hostPaths replaces the skill's folder (as given and with its links
// resolved) by its mount point, the workspace's host folder by
// /workspace, and the policy file by the words "operator policy".
func (s *Service) hostPaths(skillRef string, e *Explanation) *strings.Replacer {
	var pairs []string
	add := func(host, shown string) {
		if host == "" || host == shown {
			return
		}
		pairs = append(pairs, host, shown)
		if real, err := filepath.EvalSymlinks(host); err == nil && real != host {
			pairs = append(pairs, real, shown)
		}
	}
	if sk, err := s.Skill(skillRef); err == nil {
		add(sk.Dir, policy.SandboxDir(sk.Manifest.Name))
	}
	if e != nil {
		add(e.Workspace, policy.SandboxWorkspace)
	}
	if s.pol != nil && filepath.IsAbs(s.pol.Source) {
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
// caller; what it wraps still decides how it is classified.
type inSandboxError struct {
	msg string
	err error
}

func (e *inSandboxError) Error() string { return e.msg }
func (e *inSandboxError) Unwrap() error { return e.err }
