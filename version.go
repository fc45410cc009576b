package sandboxrun

import (
	"os"

	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// Version is sandboxrun's release; it tags the runner image and is visible to
// scripts as SANDBOXRUN_VERSION.
const Version = "0.1.0"

// RunnerImageEnv names the variable that overrides the runner image's
// reference, for an operator who keeps a pinned or privately named runner,
// or for two source trees on one engine that must not share a runner.
const RunnerImageEnv = "SANDBOXRUN_RUNNER_IMAGE"

// RunnerImage is the image every sandbox runs unless a skill has its own:
// $SANDBOXRUN_RUNNER_IMAGE when set, else sandboxrun/runner:<Version>.
func RunnerImage() string {
	if ref := os.Getenv(RunnerImageEnv); ref != "" {
		return ref
	}
	return layout.RunnerRef(Version)
}
