package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

const (
	// pingTimeout bounds the daemon check; a healthy daemon answers in
	// milliseconds, a dead socket fails at once, a hung one must not hang us.
	pingTimeout = 20 * time.Second
	// cleanupTimeout bounds each removal done after a failure or cancel.
	cleanupTimeout = 30 * time.Second
)

// checkDocker confirms that the Docker daemon answers.
func (c *Client) checkDocker(ctx context.Context) error {
	e, err := c.engine()
	if err != nil {
		return err
	}
	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err = e.Ping(pingCtx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("checking the Docker daemon: %w", ctx.Err())
	}
	// "docker daemon unreachable" is the phrase docs/troubleshooting.md and
	// package sandbox's error use for the same condition.
	return fmt.Errorf("%w: docker daemon unreachable: start it (e.g. `sudo systemctl start docker`), check DOCKER_HOST, and make sure this user may use the Docker socket (root, or a member of the docker group): %w", ErrNoDocker, err)
}

// imageInfo is the part of an image this package uses.
type imageInfo = imageapi.Image

// Inspect returns the ID and labels of a local image. It returns an error
// matching ErrNotFound when ref does not exist locally and one matching
// ErrNoDocker when the daemon cannot be asked.
func (c *Client) Inspect(ctx context.Context, ref string) (id string, labels map[string]string, err error) {
	info, err := c.inspectImage(ctx, ref)
	if err != nil {
		return "", nil, err
	}
	return info.ID, info.Labels, nil
}

func (c *Client) inspectImage(ctx context.Context, ref string) (imageInfo, error) {
	if err := validateRef(ref); err != nil {
		return imageInfo{}, err
	}
	e, err := c.engine()
	if err != nil {
		return imageInfo{}, err
	}
	info, err := e.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return info, nil
	case ctx.Err() != nil:
		return imageInfo{}, fmt.Errorf("inspecting image %s: %w", ref, err)
	case isNotFound(err):
		return imageInfo{}, fmt.Errorf("image %s: %w", ref, ErrNotFound)
	}
	// Any other failure: say whether the daemon is there at all.
	if pingErr := c.checkDocker(ctx); pingErr != nil {
		return imageInfo{}, pingErr
	}
	return imageInfo{}, fmt.Errorf("inspecting image %s: %w", ref, err)
}

// validateRef refuses references that are no image name before they reach
// the engine.
func validateRef(ref string) error {
	switch {
	case ref == "":
		return errors.New("image reference is empty: give a name like sandboxrun/runner:0.1.0")
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf("image reference %q starts with '-': give a name like sandboxrun/runner:0.1.0", ref)
	case strings.ContainsAny(ref, " \t\r\n"):
		return fmt.Errorf("image reference %q contains whitespace: give a name like sandboxrun/runner:0.1.0", ref)
	}
	return nil
}

func (c *Client) pullImage(ctx context.Context, ref string, progress io.Writer) error {
	e, err := c.engine()
	if err != nil {
		return err
	}
	return e.ImagePull(ctx, ref, progress)
}

func (c *Client) tagImage(ctx context.Context, id, ref string) error {
	e, err := c.engine()
	if err != nil {
		return err
	}
	return e.ImageTag(ctx, id, ref)
}

// removeIfUntagged deletes an image this package produced once nothing
// refers to it by name any more: a runner or base replaced by a rebuild, or
// a layer left by a failed build. Images that are still tagged, have
// children or are used by containers stay (the daemon refuses, and we do not
// force). It runs detached from ctx's cancellation because it is cleanup.
func (c *Client) removeIfUntagged(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	info, err := c.inspectImage(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(info.RepoTags) > 0 {
		return nil
	}
	e, err := c.engine()
	if err != nil {
		return err
	}
	if err := e.ImageRemove(ctx, info.ID); err != nil && !isNotFound(err) {
		return fmt.Errorf("removing untagged image %s: %w", ShortID(info.ID), err)
	}
	return nil
}
