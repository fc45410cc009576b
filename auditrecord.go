package sandboxrun

import (
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// auditRecord describes the execution of p for the audit log: the policy
// that decided, and the caller's command-line arguments kept out of argv
// (only their count and digest stay, as for the JSON arguments).
func auditRecord(p *plan.Plan, res *sandbox.Result, runErr error) audit.Record {
	rec := audit.NewRecord(p.Spec, p.Script, p.Args, res, runErr)
	rec.PolicyDigest = p.PolicyDigest
	rec.SkillDigest = p.SkillDigest
	if res != nil {
		rec.Cache = res.Cache
	}
	rec.WithoutCallerArgv(p.CallerArgv)
	return rec
}

// auditOp records a session or upload call of the door's caller, failed
// (err) or not. Failing to record it is logged: the call has happened.
func (d *Door) auditOp(op audit.Operation, err error) {
	log := d.svc.cfg.Audit
	if log == nil {
		return
	}
	op.Owner, op.Tenant = d.c.Owner, d.c.Label
	if err != nil {
		op.Error = err.Error()
	}
	if aerr := log.AppendOperation(op); aerr != nil {
		d.svc.log.Error("audit log write failed", "err", aerr, "op", op.Op)
	}
}
