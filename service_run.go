package sandboxrun

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/catalog"
	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// CheckCommand is RunCommand's decision, for a request with no other
// settings, without running anything: the command that would run (the
// skill's references resolved), or the refusal. It is Explain's plan.
func (s *Service) CheckCommand(skillRef, command string) (string, error) {
	e, err := s.Explain(context.Background(), skillRef, Action{Command: command}, Request{})
	if e == nil || e.Command == "" {
		return command, err
	}
	return e.Command, err
}

// asked is what a request asked for, for the audit record of a refusal.
type asked struct {
	skill  string // the reference; the skill's name once it resolved
	script string
	argv   []string
	stdin  []byte // the code for RunPython; else req.Args
	digest string // the skill's, once it is resolved
}

// execute is every run's sequence: wait for a slot (or ErrBusy), load the
// skill, plan the request (the policy's one decision), find or build the
// image the plan names, run, audit, observe.
// The Execution carries the skill once it loaded and the plan once it
// was made, whatever happened next. A run turned away by the admission is
// neither audited nor observed as an execution: nothing was asked of the
// policy or the engine. A run its token's quotas have no room for is
// turned away before it queues; one that ends counts its Result's use.
func (s *Service) execute(ctx context.Context, ref string, req Request, a Action, ak asked) *Execution {
	x := &Execution{svc: s}
	if req.Session != "" {
		// a run into a session may grow it: not once its token holds
		// its stored_bytes quota.
		if err := s.checkStored(Caller{Owner: req.owner, Label: req.label, OtherReplicas: req.otherReplicas}, 0); err != nil {
			x.err = err
			return x
		}
	}
	counted, err := s.beginUsage(req.label)
	if err != nil {
		x.err = err
		return x
	}
	release, err := s.admitRun(ctx, req.label)
	if err != nil {
		counted(nil)
		if errors.Is(err, ErrBusy) {
			s.observeRefusal(req.label, "busy")
		}
		x.err = err
		return x
	}
	defer release()
	defer func() { counted(x.result) }()
	start := time.Now()
	ctx, span := telemetry.Start(ctx, "sandboxrun.run")
	defer func() {
		name := ""
		if x.skill != nil {
			name = x.skill.Manifest.Name
		}
		s.observe(observed(name, x.source, x.result, x.err, time.Since(start)))
		endRun(span, name, x.result, x.err)
	}()
	x.result, x.err = s.run(ctx, ref, req, a, ak, x)
	return x
}

// run is execute's sequence: prepare the request, then run it (or answer
// it from the cache), keep its Result and audit it. A request refused on
// the way is audited once, here.
func (s *Service) run(ctx context.Context, ref string, req Request, a Action, ak asked, x *Execution) (*sandbox.Result, error) {
	ak.skill = ref
	ctx, r, done, err := s.prepare(ctx, &req, a, &ak, x)
	defer done()
	if err != nil {
		s.auditRefusal(req, ak, err)
		return nil, err
	}
	rs, p, eng := r.rs, x.plan, r.eng
	cacheKey, cacheTTL := s.cacheKey(ctx, eng, rs, req, p)
	if hit, ok := s.cachedRun(cacheKey, req); ok {
		return hit, s.auditRun(p, req, hit, nil)
	}
	// A run with an egress allowlist gets its own proxy around the sandbox.
	p.Spec.TraceParent = telemetry.TraceParent(ctx)
	p.Spec.UsageEvery, p.Spec.Usage = s.usageEvery(req.UsageEvery), req.Usage
	res, err := egressrun.Runner{Runner: eng, Options: []egress.Option{egress.WithLogger(s.log)}}.Run(ctx, p.Spec)
	res, err = s.handBackFull(res, err)
	pastQuota(res, req.lease)
	if res != nil {
		res.SkillDigest = rs.Digest
	}
	s.keepResult(cacheKey, cacheTTL, res, err)
	if aerr := s.auditRun(p, req, res, err); aerr != nil && err == nil {
		// An operator who keeps an audit log is told when a run could not
		// be recorded, rather than the run passing unrecorded.
		err = aerr
	}
	return res, err
}

// ready is a request prepared to run: its skill and its engine (the plan
// is the Execution's).
type ready struct {
	rs  Resolved
	eng Engine
}

// prepare takes the request's session, resolves its skill, plans the
// request and makes its image concrete, recording the skill and the plan
// in x and the skill in ak as it gets them. The returned context is the
// run's; done releases what prepare took, whatever it returned.
func (s *Service) prepare(ctx context.Context, req *Request, a Action, ak *asked, x *Execution) (context.Context, ready, func(), error) {
	var closers []func()
	done := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	ctx, release, err := s.sessionRun(ctx, req)
	if err != nil {
		return ctx, ready{}, done, err
	}
	closers = append(closers, release)
	_, lookup := telemetry.Start(ctx, "sandboxrun.skill.lookup")
	rs, err := s.ResolveSkill(req.owner, ak.skill)
	endStep(lookup, err)
	if err != nil {
		return ctx, ready{}, done, err
	}
	x.skill, x.source = rs.Skill, rs.Source
	ak.skill, ak.digest = rs.Skill.Manifest.Name, rs.Digest
	_, decide := telemetry.Start(ctx, "sandboxrun.policy.decide")
	p, err := s.planRun(rs, a, *req)
	endStep(decide, err)
	x.plan = p
	if err != nil {
		return ctx, ready{}, done, err
	}
	p.SkillDigest, p.Spec.SkillDigest = rs.Digest, rs.Digest
	eng, err := s.runner(ctx)
	if err != nil {
		return ctx, ready{}, done, err
	}
	closeChanges, err := s.setChanges(req, p)
	if err != nil {
		return ctx, ready{}, done, err
	}
	closers = append(closers, closeChanges)
	ictx, choose := telemetry.Start(ctx, "sandboxrun.image.choose")
	err = s.resolveImage(ictx, eng, rs, *req, p)
	endStep(choose, err)
	return ctx, ready{rs: rs, eng: eng}, done, err
}

// planRun plans a run. A remote caller names a script as the skill sees
// it: an absolute host path, even one inside the skill, or a ".." is
// refused before the file system is consulted.
func (s *Service) planRun(rs Resolved, a Action, req Request) (*plan.Plan, error) {
	if a.Script != "" && !s.cfg.AllowSkillPaths {
		if _, err := skillPath(rs.Skill.Manifest.Name, a.Script); err != nil {
			return nil, err
		}
	}
	return s.makePlan(rs, a, req)
}

// resolveImage makes the plan's image concrete: the skill image's tag,
// looked up on the runner the plan chose (and built when missing, unless
// req.NoBuild), or a check that a runner profile is built. A caller's
// image and the runner itself are the engine's to find.
func (s *Service) resolveImage(ctx context.Context, eng Engine, rs Resolved, req Request, p *plan.Plan) error {
	if req.Image != "" {
		return nil
	}
	// Pip and progress are the plan's (p.SkillImage), from the Service's
	// Config: this lookup takes the rest.
	sk := rs.Skill
	o := BuildOptions{NoBuild: req.NoBuild, Policy: rs.Source.Policy(s.pol), Runner: p.Runner, Lookup: s.lookupImage(eng)}
	var image string
	var err error
	if p.SkillImage != nil && rs.Source != catalog.Operator {
		image, err = s.cat.UploadImage(ctx, s.imageEnv(), req.owner, sk, o, p.SkillImage)
	} else {
		image, err = s.imageEnv().ImageOn(ctx, sk, o, p.SkillImage)
	}
	if err != nil {
		return err
	}
	p.Spec.Image = image
	return nil
}

func (s *Service) auditRun(p *plan.Plan, req Request, res *sandbox.Result, runErr error) error {
	if s.cfg.Audit == nil {
		return nil
	}
	rec := auditRecord(p, res, runErr)
	rec.Owner = req.owner
	rec.Tenant = req.label
	err := s.cfg.Audit.Append(rec)
	if err != nil {
		s.log.Error("audit log write failed", "err", err, "run_id", rec.RunID)
	}
	return err
}

// auditRefusal records a request policy turned down; any other error is
// not a refusal and is not recorded here. Failing to record it is logged,
// not fatal: the request is refused anyway.
func (s *Service) auditRefusal(req Request, a asked, err error) {
	if s.cfg.Audit == nil || !errors.Is(err, ErrRefused) {
		return
	}
	stdin := a.stdin
	if stdin == nil {
		stdin = req.Args
	}
	rec := audit.NewRefusal(a.skill, a.script, a.argv, stdin, err)
	rec.Owner = req.owner
	rec.PolicyDigest = s.pol.Digest
	rec.SkillDigest = a.digest
	rec.Tenant = req.label
	if aerr := s.cfg.Audit.Append(rec); aerr != nil {
		s.log.Error("audit log write failed", "err", aerr, "skill", a.skill)
	}
}

func (s *Service) observe(o Observed) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.Observe(o)
	}
}

// observed is what an Observer is told of a run of the skill name from
// source ("" before the skill resolved). Only an operator skill is told
// by name: a caller naming skills that do not exist, or uploading them
// under names of its choosing, must neither grow the metrics' labels nor
// show those names to other callers.
func observed(name string, source catalog.Source, res *sandbox.Result, err error, d time.Duration) Observed {
	if source != catalog.Operator {
		name = ""
	}
	return Observed{Skill: name, Source: string(source), Outcome: OutcomeOf(res, err), Duration: d}
}
