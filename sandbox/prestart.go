package sandbox

import (
	"encoding/json"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// PrestartArgv0 is the interpreter a warm sandbox can start before its
// job arrives (sandbox-init knows how to hand a job to a waiting python3).
const PrestartArgv0 = "python3"

// Prelude asks a warm sandbox made for runs like tmpl to start python3
// now, when tmpl's run used it: the next run of the same skill likely
// does too, and then pays no interpreter start. The environment is the
// one sandboxrun gives every script of that skill, with the container's own
// run id; tmpl carries no caller variables, so nothing of one request
// reaches a sandbox that will serve another. sandbox-init hands the job
// over only when its environment differs in the run id alone, and starts it
// the usual way otherwise.
func Prelude(tmpl *Spec, version string) ([]byte, bool) {
	if len(tmpl.Argv) == 0 || tmpl.Argv[0] != PrestartArgv0 || len(tmpl.Env) > 0 {
		return nil, false
	}
	// A trace is one request's: the next run's job brings its own (and a
	// traced job then starts its interpreter the usual way).
	untraced := *tmpl
	untraced.TraceParent = ""
	b, err := json.Marshal(frame.Prelude{Prestart: &frame.Prestart{
		Argv0: PrestartArgv0,
		Env:   ScriptEnv(&untraced, version),
		Dir:   WorkspaceDir,
		Vary:  []string{EnvRunID},
	}})
	return b, err == nil
}
