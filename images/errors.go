package images

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNoDocker means the Docker client cannot be set up or the daemon cannot be
	// reached; the wrapping error says which and how to fix it.
	ErrNoDocker = errors.New("docker is not available")
	// ErrNotFound means an image reference does not exist locally.
	ErrNotFound = errors.New("image not found")
	// ErrBootstrap means the registry-free base could not be bootstrapped;
	// errors.As with *BootstrapError gives the failed step and log tail.
	ErrBootstrap = errors.New("bootstrapping the base image failed")
)

// CommandError reports a failed external command (debootstrap, tar,
// apt-get) or build container, with the end of what it wrote to stderr.
type CommandError struct {
	// Command is the program and its arguments, for the message.
	Command []string
	// ExitCode is the exit status, or -1 when the process did not exit
	// normally (killed, not started).
	ExitCode int
	// StderrTail is the last few KiB the command wrote to stderr.
	StderrTail string
	Err        error
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s: %v", strings.Join(e.Command, " "), e.Err)
	if tail := lastLines(e.StderrTail, 5); tail != "" {
		msg += ": " + tail
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// BootstrapError reports which step of the debootstrap fallback failed. It
// matches ErrBootstrap with errors.Is.
type BootstrapError struct {
	// Step is what was being done, e.g. "running debootstrap".
	Step string
	// LogTail is the end of debootstrap's own log when there is one; it
	// usually names the package or mirror that failed.
	LogTail string
	Err     error
}

func (e *BootstrapError) Error() string {
	msg := fmt.Sprintf("%v: %s: %v", ErrBootstrap, e.Step, e.Err)
	if e.LogTail != "" {
		msg += "\ndebootstrap log (last lines):\n" + e.LogTail
	}
	return msg
}

// Unwrap exposes both the sentinel and the cause, so errors.Is works for
// ErrBootstrap as well as for what went wrong underneath (context.Canceled,
// a *CommandError, ...).
func (e *BootstrapError) Unwrap() []error { return []error{ErrBootstrap, e.Err} }

// lastLines returns at most n trailing non-empty lines of s, joined by
// " | " so they fit in a one-line error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	kept := make([]string, 0, n)
	for i := len(lines) - 1; i >= 0 && len(kept) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			kept = append(kept, l)
		}
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return strings.Join(kept, " | ")
}
