package sandboxrun

import (
	"context"
	"sync/atomic"

	"github.com/sandboxrun/sandboxrun/catalog"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// Hooks for the black-box tests: the plan as a Service with req.Policy
// (nil: the built-in one) makes it, and the unexported helpers the
// Service runs.

// Prepared is a request's plan.
type Prepared = plan.Plan

// EgressRunner is the Service's egress wrapper.
type EgressRunner = egressrun.Runner

var (
	SkillPath   = skillPath
	AuditRecord = auditRecord
)

func planFor(sk *skill.Skill, a Action, req Request) (*plan.Plan, error) {
	pol := req.Policy
	if pol == nil {
		pol = policy.BuiltinPolicy()
	}
	s := &Service{pol: pol}
	return s.makePlan(Resolved{Skill: sk, Source: catalog.Operator}, a, req)
}

// prepared is the plan of a request that may run, nil for a refused one.
func prepared(p *plan.Plan, err error) (*plan.Plan, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

func PrepareScript(sk *skill.Skill, script string, req Request) (*plan.Plan, error) {
	return prepared(planFor(sk, Action{Script: script}, req))
}

func PrepareCommand(sk *skill.Skill, command string, req Request) (*plan.Plan, error) {
	return prepared(planFor(sk, Action{Command: command}, req))
}

func PreparePython(sk *skill.Skill, code []byte, req Request) (*plan.Plan, error) {
	return prepared(planFor(sk, Action{Code: code, Python: true}, req))
}

// CheckCommand is the command as judged and the denial, from the plan.
func CheckCommand(sk *skill.Skill, pol *policy.Operator, command string) (string, error) {
	p, err := planFor(sk, Action{Command: command}, Request{Policy: pol})
	return p.Command, err
}

// RunnerFor is the runner the plan picks for a skill of that name.
func RunnerFor(pol *policy.Operator, skillName string) (string, error) {
	return (&Service{}).imageEnv().RunnerFor(&skill.Skill{Manifest: skill.Manifest{Name: skillName}}, BuildOptions{Policy: pol})
}

func ImageFor(ctx context.Context, sk *skill.Skill, o BuildOptions) (string, error) {
	return (&Service{}).imageEnv().ImageFor(ctx, sk, o)
}

func BuildSkillImage(ctx context.Context, sk *skill.Skill, o BuildOptions) (images.Image, error) {
	return (&Service{}).imageEnv().Build(ctx, sk, o)
}

func SkillImageOptions(sk *skill.Skill, o BuildOptions) (images.SkillOptions, error) {
	return (&Service{}).imageEnv().SkillOptions(sk, o)
}

// CountSkillLoads counts from now on the skills s loads (Service.Skill,
// which every request goes through): the count so far.
func CountSkillLoads(s *Service) func() int64 {
	var n atomic.Int64
	s.loaded = func() { n.Add(1) }
	return n.Load
}

// RemoteOf is res and err as Execution.Answer tells a remote caller them
// after a run of the skill named ref (loaded here; not found, none).
func RemoteOf(s *Service, ref string, res *sandbox.Result, err error) (*sandbox.Result, error) {
	sk, _ := s.Skill(ref)
	return (&Execution{svc: s, skill: sk, result: res, err: err, remote: true}).Answer()
}

// Tell is err as a remote caller is told it, from no skill's run.
func Tell(s *Service, err error) error {
	return s.For(Caller{Remote: true}).answer(nil, "", err)
}

// WithOwner is req made by owner, as Door.Execute makes it.
func WithOwner(req Request, owner string) Request {
	req.owner = owner
	return req
}

// SessionStore and UploadStore are the Service's stores, for tests that
// set up what a caller would have made through its Door.
func SessionStore(s *Service) (*session.Store, error)   { return s.sessionStore() }
func UploadStore(s *Service) (*skillstore.Store, error) { return s.skillStore() }

// ReadSkillFileOf is readSkillFile of the operator skill skillRef, loaded
// without its digest, so that its guards are tested on a skill the digest
// would refuse as a whole (a named pipe in it).
func ReadSkillFileOf(s *Service, skillRef, ref string) (*SkillFile, error) {
	sk, err := s.Skill(skillRef)
	return s.readSkillFile(sk, err, ref)
}

// ReapDead is one tick of the Service's upkeep reaping.
func ReapDead(s *Service) { s.reapDead(context.Background()) }
