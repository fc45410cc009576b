package sandboxrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxrun/sandboxrun/catalog"
	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// Outcome is how a request ended, in the words metrics and front ends use.
type Outcome string

// The outcomes, from best to worst.
const (
	OutcomeSuccess  Outcome = "success"  // exit 0
	OutcomeFailure  Outcome = "failure"  // the script's own non-zero exit or a signal
	OutcomeTimeout  Outcome = "timeout"  // killed at the time limit
	OutcomeOOM      Outcome = "oom"      // killed at the memory limit
	OutcomeRefused  Outcome = "refused"  // policy said no; nothing ran
	OutcomeCanceled Outcome = "canceled" // the caller went away
	OutcomeError    Outcome = "error"    // the environment failed (engine, image, sandbox)
)

// OutcomeOf classifies what a Run* call returned.
func OutcomeOf(res *sandbox.Result, err error) Outcome {
	switch {
	case errors.Is(err, ErrRefused), errors.Is(err, sandbox.ErrInvalidSpec):
		return OutcomeRefused
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case err != nil || res == nil:
		return OutcomeError
	case res.TimedOut:
		return OutcomeTimeout
	case res.OOMKilled:
		return OutcomeOOM
	case res.Success:
		return OutcomeSuccess
	default:
		return OutcomeFailure
	}
}

// Execution is one run as the Service carried it out for a caller
// (Door.Execute): what it returned, with the skill and the plan it was
// decided with, so that the caller's answer (Answer) is composed from them
// and nothing downstream loads the skill or decides the request again.
type Execution struct {
	result *sandbox.Result
	err    error
	remote bool // the caller is told sandbox paths only

	svc    *Service
	skill  *skill.Skill   // nil: refused before the skill loaded
	source catalog.Source // the skill's once it resolved
	plan   *plan.Plan     // nil: refused before the plan was made
}

// Outcome classifies how the run ended (OutcomeOf).
func (x *Execution) Outcome() Outcome { return OutcomeOf(x.result, x.err) }

// PythonResult is the answer agent tools expect from a run-Python call.
// Refusals and failures answer in the same shape, with ReturnCode -1 and
// Error set.
type PythonResult struct {
	SkillName  string `json:"skill_name"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ReturnCode int    `json:"returncode"`
	TimedOut   bool   `json:"timed_out"`
	Error      string `json:"error,omitempty"`
	// Files are what the run changed in its writable workspace.
	Files []sandbox.FileChange `json:"files,omitempty"`
}

// NewPythonResult shapes what RunPython returned for an agent: a finished
// run gives its output and exit status, a timeout returncode -1 and an error
// naming the limit; a run that failed mid-way gives its output so far; a
// refusal or environment failure just the reason.
func NewPythonResult(skillName string, res *sandbox.Result, err error) PythonResult {
	if res == nil || (err != nil && !res.Started) {
		pr := PythonResult{SkillName: skillName, ReturnCode: -1}
		if err != nil {
			pr.Error = err.Error()
		}
		return pr
	}
	pr := PythonResult{
		SkillName:  res.Skill,
		Stdout:     res.Stdout,
		Stderr:     res.Stderr,
		ReturnCode: res.ExitCode,
		TimedOut:   res.TimedOut,
		Error:      res.Error,
		Files:      res.Files,
	}
	switch {
	case err != nil:
		pr.ReturnCode = -1
		if pr.Error == "" {
			pr.Error = err.Error()
		}
	case res.TimedOut:
		pr.ReturnCode = -1
		pr.Error = fmt.Sprintf("Execution timed out after %g seconds", res.Limits.TimeoutSec)
	case res.OOMKilled:
		pr.Error = fmt.Sprintf("Execution exceeded the memory limit of %d MiB", res.Limits.MemoryBytes>>20)
	case res.Signal != "" && pr.Error == "":
		pr.Error = "Execution killed by " + res.Signal
	}
	return pr
}
