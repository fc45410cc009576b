package docker

import (
	"fmt"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// imageNotFound explains how to get the missing image.
func imageNotFound(ref string, cause error) error {
	fix := "pull or build it, or run without --image"
	switch {
	case strings.HasPrefix(ref, layout.RunnerRepo+":"):
		fix = "build it with `sandboxrun images build` (or `make images`)"
	case strings.HasPrefix(ref, layout.SkillRepoPrefix):
		fix = "build it with `sandboxrun build SKILL`"
	}
	return fmt.Errorf("%w: %q is not in the local Docker engine; %s: %w", sandbox.ErrImageNotFound, ref, fix, cause)
}

// dockerUnavailable explains an unreachable daemon.
func dockerUnavailable(doing string, cause error) error {
	return fmt.Errorf("%s: %w: start Docker, or point DOCKER_HOST at a running engine: %w",
		doing, ErrUnavailable, cause)
}
