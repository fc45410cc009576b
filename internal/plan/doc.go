// Package plan computes, once per request, everything the operator's
// policy decides about it: the argv, the limits after defaults and
// ceilings, the network and egress allowlist, the workspace and whether it
// is writable, the environment checks, and the image the sandbox starts
// in (or the skill image it needs, built on which runner). A run executes
// the plan; `policy check`, `exec --dry-run` and every refusal the front
// ends report read the same plan, so an explanation cannot disagree with
// the run that follows it.
package plan
