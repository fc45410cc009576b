package sandboxrun

import (
	"context"

	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Caller is who asks the Service, given once per request: every answer
// for it is composed from this value, not from which method a front end
// remembered to call.
type Caller struct {
	// Owner scopes what the caller reaches: its sessions, its uploaded
	// skills and its per-owner limits. It is the digest of the caller's
	// token (server.Owner), a front end's own name for callers with none
	// ("mcp"), or "" for the operator.
	Owner string
	// Label names the caller's token (the tokens file's label, or one
	// derived from the token's digest; never the token): fair share,
	// quotas, usage, metrics and audit records name the caller by it. ""
	// for a caller with no token (the CLI, MCP over stdio, a server
	// without tokens), which no tenants share or quota bounds.
	Label string
	// Remote callers (the HTTP API, MCP clients) are told of the
	// sandbox's folders, never the host's: every message, Result and
	// explanation they get names a skill's folder as /skills/<name>, the
	// workspace as /workspace and any other host path by what it is. A
	// local caller (the CLI, whose user is the operator) is told the
	// host's own.
	Remote bool
	// OtherReplicas, when set, is what the caller's sessions hold on the
	// server's other replicas: the stored_bytes check and the caller's own
	// usage add it to this replica's sessions. A front end of a replicated
	// server sets it (the HTTP server asks the peers, with the caller's own
	// token); it is called only when a figure is needed. nil: one server.
	OtherReplicas func() int64
}

// Local is the operator at the host: the CLI, a library caller. It owns
// no uploads and is told host paths.
var Local = Caller{}

// Door is the Service as one caller reaches it (Service.For). Its methods
// are the Service's operations, each answered for that caller.
type Door struct {
	svc *Service
	c   Caller
}

// For is the Service's door for c.
func (s *Service) For(c Caller) *Door {
	s.owners.learn(c.Label, c.Owner)
	return &Door{svc: s, c: c}
}

// Caller is who the door answers.
func (d *Door) Caller() Caller { return d.c }

// answer is err as the caller is told it, from a request that loaded sk
// (nil: none) and gave the run the host folder workspace ("": none). nil
// stays nil; a local caller is told err itself.
func (d *Door) answer(sk *skill.Skill, workspace string, err error) error {
	if err == nil || !d.c.Remote {
		return err
	}
	return d.svc.callerNames(sk, workspace).Err(err)
}

// Execute runs a (a script, a command, or inline Python) for the caller:
// req.Owner is the caller's. The Execution's Answer is what the caller is
// told.
func (d *Door) Execute(ctx context.Context, skillRef string, a Action, req Request) *Execution {
	req.owner, req.label, req.otherReplicas = d.c.Owner, d.c.Label, d.c.OtherReplicas
	var ak asked
	switch {
	case a.Script != "":
		ak.script = a.Script
	case a.Command != "":
		ak.argv = bashcheck.BashArgv(a.Command)
	case a.Python:
		ak.argv, ak.stdin = []string{"python3", "-"}, a.Code
	}
	x := d.svc.execute(ctx, skillRef, req, a, ak)
	x.remote = d.c.Remote
	return x
}

// RunScript runs one of the skill's scripts (scripts/x.py, {baseDir}/...,
// or its sandbox path) with req's arguments and limits. Unless the Service
// allows skill paths (a local front end), a host path is refused.
func (d *Door) RunScript(ctx context.Context, skillRef, script string, req Request) (*sandbox.Result, error) {
	return d.Execute(ctx, skillRef, Action{Script: script}, req).Answer()
}

// RunCommand runs a Bash-tool command once every simple command in it is
// allowed by the skill's allowed-tools and the operator's grants. A denial
// matches ErrRefused and, with errors.As, *policy.DeniedError.
func (d *Door) RunCommand(ctx context.Context, skillRef, command string, req Request) (*sandbox.Result, error) {
	return d.Execute(ctx, skillRef, Action{Command: command}, req).Answer()
}

// RunPython runs model-written Python code in the skill's sandbox; the code
// reaches python3 on its stdin.
func (d *Door) RunPython(ctx context.Context, skillRef string, code []byte, req Request) (*sandbox.Result, error) {
	return d.Execute(ctx, skillRef, Action{Code: code, Python: true}, req).Answer()
}

// Activate returns what an agent reads when it chooses a skill: the body
// with {baseDir} resolved to the skill's sandbox folder, its scripts,
// references and assets, and its allowed tools with the operator's grants.
// The caller may name one of its uploaded skills, pinned or not
// (ResolveSkill).
func (d *Door) Activate(ref string) (*skill.Activation, error) {
	sk, a, err := d.svc.activate(d.c.Owner, ref)
	if err != nil {
		return nil, d.answer(sk, "", err)
	}
	return a, nil
}

// ListSkills lists the operator's skills and the caller's uploads,
// metadata only. What could not be listed is in the second result, for
// the operator's log, never for the caller.
func (d *Door) ListSkills() ([]Listed, []error) { return d.svc.cat.List(d.c.Owner) }

// ReadSkillFile reads one file of a skill the caller may name, for an
// agent (see readSkillFile); its errors are in sandbox terms for every
// caller.
func (d *Door) ReadSkillFile(skillRef, ref string) (*SkillFile, error) {
	rs, err := d.svc.ResolveSkill(d.c.Owner, skillRef)
	return d.svc.readSkillFile(rs.Skill, err, ref)
}

// RunScript, RunCommand and RunPython on the Service are the Local
// caller's: For(Local).RunScript and so on.

// RunScript is For(Local).RunScript.
func (s *Service) RunScript(ctx context.Context, skillRef, script string, req Request) (*sandbox.Result, error) {
	return s.For(Local).RunScript(ctx, skillRef, script, req)
}

// RunCommand is For(Local).RunCommand.
func (s *Service) RunCommand(ctx context.Context, skillRef, command string, req Request) (*sandbox.Result, error) {
	return s.For(Local).RunCommand(ctx, skillRef, command, req)
}

// RunPython is For(Local).RunPython.
func (s *Service) RunPython(ctx context.Context, skillRef string, code []byte, req Request) (*sandbox.Result, error) {
	return s.For(Local).RunPython(ctx, skillRef, code, req)
}

// Explain is For(Local).Explain.
func (s *Service) Explain(ctx context.Context, skillRef string, a Action, req Request) (*Explanation, error) {
	return s.For(Local).Explain(ctx, skillRef, a, req)
}
