package policy

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// Decide decides the effective limits of one execution of skill. Each value
// is the caller's request, else the skill's, else the policy's default; it is
// then held to the policy's ceiling (per skill, else global): lowered to it
// when on_exceed is clamp (Limits.Clamped and Sources say so), refused with
// ErrLimit when it is refuse. A skill's value is a request, never a grant:
// the caller may ask for more than the skill declares, up to the ceiling.
func (o *Operator) Decide(skill string, s SkillLimits, r Request) (Limits, error) {
	if err := s.Validate(); err != nil {
		return Limits{}, err
	}
	if err := r.validate(); err != nil {
		return Limits{}, err
	}
	g := o.grants(skill).Limits
	l := DefaultLimits()
	l.Sources = map[string]where.Text{}
	d := decider{o: o, skill: skill, l: &l}
	timeout, e1 := decide(d, "timeout", "max_execution_time", Duration(r.Timeout), Duration(s.Timeout), g.Timeout, o.Limits.Timeout)
	memory, e2 := decide(d, "memory", "max_memory", Size(r.MemoryMiB<<20), Size(s.MemoryMiB<<20), g.Memory, o.Limits.Memory)
	cpus, e3 := decide(d, "cpus", "max_cpus", Number(r.CPUs), Number(s.CPUs), g.CPUs, o.Limits.CPUs)
	pids, e4 := decide(d, "pids", "", Count(0), Count(0), g.Pids, o.Limits.Pids)
	if err := errors.Join(e1, e2, e3, e4); err != nil {
		return Limits{}, err
	}
	l.Timeout, l.TimeoutSec = time.Duration(timeout), time.Duration(timeout).Seconds()
	l.MemoryBytes, l.CPUs, l.Pids = int64(memory), float64(cpus), int64(pids)
	l.OutputBytes = int64(g.Output.Max.or(o.Limits.Output.Max).Value)
	l.WorkspaceWriteBytes = int64(g.WorkspaceWrite.Max.or(o.Limits.WorkspaceWrite.Max).Value)

	if err := o.decideNetwork(skill, s, r, &l); err != nil {
		return Limits{}, err
	}
	o.decideSecrets(skill, s, &l)
	return l, nil
}

func (r Request) validate() error {
	return errors.Join(
		reqTimeout.timeout(r.Timeout, MaxTimeout),
		reqMemory.memory(r.MemoryMiB, maxMemoryMiB),
		reqCPUs.cpus(r.CPUs, math.Inf(1)),
		r.validateDomains(),
	)
}

func (r Request) validateDomains() error {
	if r.AllowDomains == nil {
		return nil
	}
	if len(r.AllowDomains) == 0 {
		return fmt.Errorf("%w: the requested allowlist is empty; name at least one host, or leave it out", egressrule.ErrDomain)
	}
	if _, err := egressrule.ParseAllowlist(r.AllowDomains); err != nil {
		return fmt.Errorf("the requested allowlist: %w", err)
	}
	return nil
}

type decider struct {
	o     *Operator
	skill string
	l     *Limits
}

// decide picks one limit's value and holds it to its ceiling. A zero req or
// skl means "not given".
func decide[T scalar](d decider, field, key string, req, skl T, rules, global Range[T]) (T, error) {
	def := rules.Default.or(global.Default)
	ceiling := rules.Max.or(global.Max)
	value, who := def.Value, def.origin("policy limits."+field+".default", d.o.Source)
	if rules.Default.Set {
		who = rules.Default.origin("policy skills."+d.skill+".limits."+field+".default", d.o.Source)
	}
	switch {
	case req != 0:
		value, who = req, where.Plain("request")
	case skl != 0:
		value, who = skl, where.Plain("skill "+key)
	}
	d.l.Sources[field] = who
	if !ceiling.Has() || ceiling.Value == 0 || value <= ceiling.Value {
		return value, nil
	}
	capFrom := ceiling.origin("policy limits."+field+".max", d.o.Source)
	if rules.Max.Set {
		capFrom = ceiling.origin("policy skills."+d.skill+".limits."+field+".max", d.o.Source)
	}
	if req == 0 && skl == 0 {
		// The operator's own default above its own ceiling (a built-in
		// default, or a global one above a skill's max): the ceiling is
		// the default.
		d.l.Sources[field] = capFrom
		return ceiling.Value, nil
	}
	if d.o.OnExceed.Value == OnExceedClamp {
		d.l.Sources[field] = where.Sprintf("%s (the %s asked for %s)", capFrom, who, value)
		d.l.Clamped = append(d.l.Clamped, field)
		return ceiling.Value, nil
	}
	fix := "ask for at most " + ceiling.Value.String()
	if req == 0 {
		fix = "pass a lower --" + field + ", or have the operator raise the ceiling"
	}
	return value, where.Errorf("%w: the %s asks for %s %s, above the ceiling of %s set by %s; %s", ErrLimit, who, field, value, ceiling.Value, capFrom, fix)
}

// ErrDenied is wrapped by every refusal of a command: the command checker
// (package command) decides it, and callers branch on it here, with the
// rest of the policy's decisions.
var ErrDenied = bashcheck.ErrDenied

// DeniedError is a denied command: the part refused, why, and the
// allowed-tools entry that would allow it (bashcheck.DeniedError).
type DeniedError = bashcheck.DeniedError
