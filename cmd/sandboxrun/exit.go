package main

import (
	"errors"
	"fmt"
)

// Exit statuses shared by every command. A script's own status passes through
// run, exec and python; these are the ones sandboxrun itself chooses.
const (
	exitOK      = 0
	exitInvalid = 1 // validate: a skill is invalid
	exitRefused = 2 // usage error, or refused before anything ran
	exitEnv     = 3 // the environment failed: Docker, images, files
	exitTimeout = 124
	// exitSandboxFailed: the sandbox started but failed mid-run (killed
	// from outside, engine failure); with --json the Result is printed with
	// error set. 125 is what docker run uses for its own failures.
	exitSandboxFailed = 125
)

// exitError carries the status a command wants main to exit with. A nil err
// means the command already said everything it had to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// silentExit ends the command with code and no further message.
func silentExit(code int) error { return &exitError{code: code} }

// usageError marks an error in how the command was called.
func usageError(format string, a ...any) error {
	return withCode(exitRefused, fmt.Errorf(format, a...))
}

// codeOf picks the exit status for an error that reached main.
func codeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return classify(err)
}
