package docker

import (
	"context"
	"errors"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ReapClient is the part of the Docker client that Reap needs.
type ReapClient interface {
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error
}

// Client is the subset of the Docker Engine API client that this package
// calls. *client.Client satisfies it; unit tests use fakes.
type Client interface {
	ReapClient
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig,
		networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerAttach(ctx context.Context, containerID string, options container.AttachOptions) (types.HijackedResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerWait(ctx context.Context, containerID string, condition container.WaitCondition) (<-chan container.WaitResponse, <-chan error)
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerKill(ctx context.Context, containerID, signal string) error
	ImageInspect(ctx context.Context, imageID string, inspectOpts ...client.ImageInspectOption) (image.InspectResponse, error)
	Ping(ctx context.Context) (types.Ping, error)
	Info(ctx context.Context) (system.Info, error)
	// The writable workspace's volume and its copies in and out.
	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	// Usr volumes (usrvolume.go).
	VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error)
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options container.CopyToContainerOptions) error
	CopyFromContainer(ctx context.Context, containerID, srcPath string) (io.ReadCloser, container.PathStat, error)
	// Live usage when the container's cgroup is not on this host
	// (usage.go).
	ContainerStatsOneShot(ctx context.Context, containerID string) (container.StatsResponseReader, error)
}

var _ Client = (*client.Client)(nil)

// newEngineClient connects to the engine named by the environment
// (DOCKER_HOST and friends) and negotiates the API version, so one binary
// talks to a 20.10 engine (API 1.41) as well as to current ones.
func newEngineClient() (*client.Client, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("configure docker client from environment: %w", err)
	}
	return c, nil
}

// apiError wraps an error from a Docker call with what was being done, and
// maps an unreachable daemon onto ErrUnavailable.
func apiError(doing string, err error) error {
	if err == nil {
		return nil
	}
	if client.IsErrConnectionFailed(err) {
		return dockerUnavailable(doing, err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// ignorableRemoveError reports whether a removal failed only because the
// container is already gone or being removed by someone else.
func ignorableRemoveError(err error) bool {
	return cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err)
}

// Ping checks that the Docker daemon answers.
func (d *Runner) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	if _, err := d.client.Ping(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || client.IsErrConnectionFailed(err) {
			return dockerUnavailable("ping docker", err)
		}
		return apiError("ping docker", err)
	}
	return nil
}

// CheckImage returns the ID of ref (the default runner image when empty),
// or an error matching ErrImageNotFound that says how to build it.
func (d *Runner) CheckImage(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		ref = d.image
	}
	ctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	img, err := d.client.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", imageNotFound(ref, err)
		}
		return "", apiError("inspect image "+ref, err)
	}
	return img.ID, nil
}
