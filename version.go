package sandboxrun

// Version is sandboxrun's release; it tags the runner image and is visible to
// scripts as SANDBOXRUN_VERSION.
const Version = "0.1.0"

// RunnerImage is the default image every sandbox runs.
func RunnerImage() string { return "sandboxrun/runner:" + Version }
