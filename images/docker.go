package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/docker/docker/pkg/stringid"
)

const (
	dockerProgram = "docker"
	// pingTimeout bounds the daemon check; a healthy daemon answers in
	// milliseconds, a dead socket fails at once, a hung one must not hang us.
	pingTimeout = 20 * time.Second
	// cleanupTimeout bounds each removal done after a failure or cancel.
	cleanupTimeout = 30 * time.Second
	// inspectMaxBytes bounds `docker image inspect` output we parse.
	inspectMaxBytes = 4 << 20
)

// checkDocker confirms that the docker CLI exists and its daemon answers.
func checkDocker(ctx context.Context) error {
	if _, err := exec.LookPath(dockerProgram); err != nil {
		return fmt.Errorf("%w: the docker CLI is not in PATH; install Docker Engine (https://docs.docker.com/engine/install/) and retry", ErrNoDocker)
	}
	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var out cappedBuffer
	out.max = 4 << 10
	err := run(pingCtx, cmdSpec{
		name:   dockerProgram,
		args:   []string{"version", "--format", "{{.Server.Version}}"},
		stdout: &out,
	})
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

// imageInfo is the part of `docker image inspect` this package uses.
type imageInfo struct {
	ID       string   `json:"Id"`
	RepoTags []string `json:"RepoTags"`
	Size     int64    `json:"Size"`
	Config   struct {
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
}

// Inspect returns the ID and labels of a local image. It returns an error
// matching ErrNotFound when ref does not exist locally and one matching
// ErrNoDocker when the daemon cannot be asked.
func Inspect(ctx context.Context, ref string) (id string, labels map[string]string, err error) {
	info, err := inspectImage(ctx, ref)
	if err != nil {
		return "", nil, err
	}
	return info.ID, info.Config.Labels, nil
}

func inspectImage(ctx context.Context, ref string) (imageInfo, error) {
	if err := validateRef(ref); err != nil {
		return imageInfo{}, err
	}
	out := cappedBuffer{max: inspectMaxBytes}
	err := run(ctx, cmdSpec{name: dockerProgram, args: []string{"image", "inspect", "--", ref}, stdout: &out})
	if err != nil {
		if ctx.Err() != nil {
			return imageInfo{}, fmt.Errorf("inspecting image %s: %w", ref, err)
		}
		// The CLI exits 1 both for a missing image and for an unreachable
		// daemon; asking the daemon tells the two apart without reading
		// its messages.
		if pingErr := checkDocker(ctx); pingErr != nil {
			return imageInfo{}, pingErr
		}
		var cmdErr *CommandError
		detail := ""
		if errors.As(err, &cmdErr) {
			detail = " (" + lastLines(cmdErr.StderrTail, 1) + ")"
		}
		return imageInfo{}, fmt.Errorf("image %s: %w%s", ref, ErrNotFound, detail)
	}
	var infos []imageInfo
	if err := json.Unmarshal(out.Bytes(), &infos); err != nil {
		return imageInfo{}, fmt.Errorf("decoding `docker image inspect %s`: %w", ref, err)
	}
	if len(infos) != 1 {
		return imageInfo{}, fmt.Errorf("docker image inspect %s: expected one image, got %d", ref, len(infos))
	}
	return infos[0], nil
}

// validateRef refuses references the CLI would misread (a leading dash is
// an option) before they reach an argument list.
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

func pullImage(ctx context.Context, ref string, progress io.Writer) error {
	return run(ctx, cmdSpec{name: dockerProgram, args: []string{"pull", "--", ref}, stdout: progress, stderr: progress})
}

func tagImage(ctx context.Context, id, ref string) error {
	return run(ctx, cmdSpec{name: dockerProgram, args: []string{"image", "tag", id, ref}})
}

// removeIfUntagged deletes an image this package produced once nothing
// refers to it by name any more: a runner or base replaced by a rebuild, or
// a layer left by a failed build. Images that are still tagged, have
// children or are used by containers stay (the daemon refuses, and we do not
// force). It runs detached from ctx's cancellation because it is cleanup.
func removeIfUntagged(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	info, err := inspectImage(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(info.RepoTags) > 0 {
		return nil
	}
	if err := run(ctx, cmdSpec{name: dockerProgram, args: []string{"image", "rm", info.ID}}); err != nil {
		return fmt.Errorf("removing untagged image %s: %w", stringid.TruncateID(info.ID), err)
	}
	return nil
}
