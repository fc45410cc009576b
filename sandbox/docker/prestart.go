package docker

import (
	"github.com/sandboxrun/sandboxrun/sandbox"

	"encoding/json"
	"fmt"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// prestartArgv0 is the interpreter a warm container can start before its
// job arrives (sandbox-init knows how to hand a job to a waiting python3).
const prestartArgv0 = "python3"

// prelude asks a warm container made for runs like tmpl to start python3
// now, when tmpl's run used it: the next run of the same skill likely
// does too, and then pays no interpreter start. The environment is the
// one sandboxrun gives every script of that skill, with the container's own
// run id; tmpl carries no caller variables, so nothing of one request
// reaches a container that will serve another. sandbox-init hands the job
// over only when its environment differs in the run id alone, and starts it
// the usual way otherwise.
func prelude(tmpl *sandbox.Spec, version string) ([]byte, bool) {
	if len(tmpl.Argv) == 0 || tmpl.Argv[0] != prestartArgv0 || len(tmpl.Env) > 0 {
		return nil, false
	}
	// A trace is one request's: the next run's job brings its own (and a
	// traced job then starts its interpreter the usual way).
	untraced := *tmpl
	untraced.TraceParent = ""
	b, err := json.Marshal(frame.Prelude{Prestart: &frame.Prestart{
		Argv0: prestartArgv0,
		Env:   sandbox.ScriptEnv(&untraced, version),
		Dir:   sandbox.WorkspaceDir,
		Vary:  []string{sandbox.EnvRunID},
	}})
	return b, err == nil
}

// sendPrelude writes the prelude ahead of the job. sandbox-init reads it
// at once, so the write does not wait on the container.
func (s *session) sendPrelude(b []byte) error {
	if _, err := s.hj.Conn.Write(b); err != nil {
		return fmt.Errorf("send the prelude to a warm sandbox: %w", err)
	}
	return nil
}
