package sandbox

import (
	"errors"
	"strings"
)

// Sentinel errors for what callers branch on. A script that fails is not an
// error: it is a Result with a non-zero exit code. Go errors mean the
// execution could not happen or could not be observed.
var (
	// ErrInvalidSpec: the Spec was refused before any engine call.
	ErrInvalidSpec = errors.New("invalid sandbox spec")
	// ErrImageNotFound: the runner image is not in the local engine.
	ErrImageNotFound = errors.New("runner image not found")
	// ErrUnavailable: the backend's engine or cluster could not be
	// reached. Each backend has its own sentinel, in its own words, that
	// matches it (see Unavailable).
	ErrUnavailable = errors.New("sandbox backend unreachable")
	// ErrNoReport: sandbox-init ended without sending its result frame.
	ErrNoReport = errors.New("sandbox-init did not report")
	// ErrWorkspace: the workspace cannot be shared with the sandbox user.
	ErrWorkspace = errors.New("workspace cannot be shared with the sandbox")
	// ErrSkillUnreadable: the skill folder is not readable by the sandbox
	// user.
	ErrSkillUnreadable = errors.New("skill folder not readable by the sandbox user")
	// ErrNotIsolated: the backend could not prove that a sandbox without
	// network has none, so runs without network are refused until the
	// operator changes the setup (Kubernetes' ErrNetworkNotIsolated
	// matches it). Nothing the caller sends can fix it.
	ErrNotIsolated = errors.New("sandboxes are not proven network-isolated")
)

// NotIsolated returns a backend's own "not proven isolated" sentinel, in
// its words, that matches ErrNotIsolated.
func NotIsolated(msg string) error { return &notIsolatedError{msg: msg} }

type notIsolatedError struct{ msg string }

func (e *notIsolatedError) Error() string        { return e.msg }
func (e *notIsolatedError) Is(target error) bool { return target == ErrNotIsolated }

// SpecError lists every problem Validate found. It matches ErrInvalidSpec
// with errors.Is.
type SpecError struct {
	Problems []string
}

func (e *SpecError) Error() string {
	return "invalid sandbox spec: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalidSpec) true.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

// Unavailable returns a backend's own "cannot reach" sentinel: its message
// names the backend ("docker daemon unreachable"), and it matches
// ErrUnavailable, so callers branch on one error whatever the backend.
func Unavailable(msg string) error { return &unavailableError{msg: msg} }

type unavailableError struct{ msg string }

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }
