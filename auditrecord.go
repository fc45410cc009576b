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
