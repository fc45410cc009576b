package catalog

import "github.com/sandboxrun/sandboxrun/policy"

// Source is where a skill was found, and so how far it is trusted: an
// operator skill is decided by the operator's policy, grants by name
// included; anything else by the same policy without them.
type Source string

// Sources of a skill, as GET /v1/skills reports them.
const (
	Operator Source = "operator"
	Uploaded Source = "uploaded"
)

// Policy is the policy a skill from src is decided by: pol for an operator
// skill; for any other source, pol without grants by name (an upload never
// inherits one by choosing a name).
func (src Source) Policy(pol *policy.Operator) *policy.Operator {
	if src == Operator {
		return pol
	}
	return pol.ForUploaded()
}
