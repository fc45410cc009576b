package main

import (
	"context"
	"errors"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// classify maps library errors to exit statuses: refusals before anything
// ran are 2, environment failures are 3, an interrupt is 130.
func classify(err error) int {
	switch {
	case errors.Is(err, sandboxrun.ErrRefused),
		errors.Is(err, sandbox.ErrInvalidSpec):
		return exitRefused
	case errors.Is(err, context.Canceled):
		return 130
	default:
		// Docker unreachable, image missing, workspace or skill folder not
		// shareable, sandbox-init silent: the environment failed.
		return exitEnv
	}
}
