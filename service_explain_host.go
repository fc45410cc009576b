package sandboxrun

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// HostCheck says whether an explanation held the run's limits against what
// the backend's host offers (its CPUs, memory and engine runtimes), with
// the very check the run makes before it starts anything. When it was
// made and refused, the refusal is the explanation's error, in the run's
// words; when it could not be made, Reason says why and a run may still
// be refused there.
type HostCheck struct {
	Checked bool   `json:"checked"`
	Reason  string `json:"reason,omitempty"`
	// Err is why the engine could not be asked, for the operator (the CLI);
	// a remote caller is told Reason only.
	Err error `json:"-"`
	// Isolation says, for a run without network on a backend that proves
	// it has none (Kubernetes), how the proof stands: which mechanism
	// proved it and when, or why runs without network are refused. It
	// does not probe. For the operator: a remote caller is not told it.
	Isolation string `json:"isolation,omitempty"`
}

// hostCheckTimeout bounds asking the engine for an explanation: an engine
// that does not answer makes the explanation say so, not hang.
const hostCheckTimeout = 10 * time.Second

// Reasons a HostCheck was not made.
const (
	hostNotReached  = "not checked: the request is refused before the run would ask the engine's host"
	hostNoBackend   = "not checked: no backend is configured to ask"
	hostNoCheck     = "not checked: this backend makes no host check before a run"
	hostUnreachable = "could not check the engine's host (CPUs, memory, runtimes): the engine could not be reached; a run may still be refused there"
	hostNoAnswer    = "could not check the engine's host (CPUs, memory, runtimes): the engine did not tell; a run may still be refused there"
)

// checkHost asks the backend whether its host can honour spec, as the run
// asks it. The error is the run's refusal (matching sandbox.ErrBeyondHost);
// an engine that cannot be asked is a HostCheck that says so, not an error.
func (s *Service) checkHost(ctx context.Context, spec sandbox.Spec) (HostCheck, error) {
	eng, err := s.backend()
	if err != nil {
		if errors.Is(err, ErrNoBackend) {
			return HostCheck{Reason: hostNoBackend}, nil
		}
		return HostCheck{Reason: hostNoAnswer, Err: err}, nil
	}
	c, ok := eng.(sandbox.SpecChecker)
	if !ok {
		return HostCheck{Reason: hostNoCheck}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, hostCheckTimeout)
	defer cancel()
	err = c.CheckSpec(ctx, spec)
	switch {
	case err == nil:
		h := HostCheck{Checked: true}
		if r, ok := eng.(sandbox.IsolationReporter); ok && !spec.Limits.Network {
			h.Isolation = r.IsolationReport()
		}
		return h, nil
	case errors.Is(err, sandbox.ErrBeyondHost):
		return HostCheck{Checked: true}, err
	case errors.Is(err, sandbox.ErrUnavailable):
		return HostCheck{Reason: hostUnreachable, Err: err}, nil
	default:
		return HostCheck{Reason: hostNoAnswer, Err: err}, nil
	}
}
