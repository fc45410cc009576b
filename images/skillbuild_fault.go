package images

// declarationSteps are the build steps whose failure, once they ran and
// exited, comes from what the skill declares: a package no source has, a
// requires-python the runner's Python does not meet. The other steps
// (starting the container, apt-get update, cleanup) fail on the server's
// side: its engine, its network.
var declarationSteps = map[string]bool{"apt-get install": true, "pip install": true, "requires-python": true}

// ByDeclaration reports whether the build failed on what the skill
// declares rather than on the server: a package step that ran and exited
// with an error. A build cut short (cancelled, timed out) is neither.
func (e *SkillBuildError) ByDeclaration() bool {
	return e.ExitCode > 0 && declarationSteps[e.StepName]
}
