package imageapi

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is what an Engine returns, wrapped, for an image or
// container that does not exist.
var ErrNotFound = errors.New("not found")

// Engine is what images needs of a Docker engine.
type Engine interface {
	// Ping confirms that the daemon answers.
	Ping(ctx context.Context) error

	// ImageInspect describes a local image by reference or ID.
	ImageInspect(ctx context.Context, ref string) (Image, error)
	// ImageList lists the local images that carry label=value.
	ImageList(ctx context.Context, label, value string) ([]Image, error)
	// ImageTag points ref at the image id.
	ImageTag(ctx context.Context, id, ref string) error
	// ImageRemove removes a tag or an image, never by force: an image a
	// container uses, or with children, stays and the error says why.
	ImageRemove(ctx context.Context, ref string) error
	// ImagePull pulls ref, writing progress lines to out.
	ImagePull(ctx context.Context, ref string, out io.Writer) error
	// ImageImport makes an untagged image of the root filesystem tar
	// rootfs and returns its ID.
	ImageImport(ctx context.Context, rootfs io.Reader, o Import) (string, error)
	// ImageBuild builds a Dockerfile from the tar build context with the
	// classic builder, which every engine has, writing the build's output
	// to out. It returns the built image's ID; a step that failed is a
	// *StepError.
	ImageBuild(ctx context.Context, buildContext io.Reader, o Build, out io.Writer) (string, error)

	// ContainerCreate creates a build container and returns its ID.
	ContainerCreate(ctx context.Context, c Container) (string, error)
	// ContainerCopyTo extracts the tar archive content into dir in the
	// container.
	ContainerCopyTo(ctx context.Context, id, dir string, content io.Reader) error
	// ContainerRun starts the container, relays its stdout and stderr and
	// returns its exit code once it stops.
	ContainerRun(ctx context.Context, id string, stdout, stderr io.Writer) (int, error)
	// ContainerCommit makes an image of the container, tagged ref, and
	// returns its ID.
	ContainerCommit(ctx context.Context, id string, o Commit) (string, error)
	// ContainerRemove force-removes the container named name, if any.
	ContainerRemove(ctx context.Context, name string) error
}

// StepError is a build step that failed: a RUN whose command exited with
// Code, as the builder reports it.
type StepError struct {
	Code    int
	Message string
}

func (e *StepError) Error() string { return e.Message }

// Image is what images reads of a local image.
type Image struct {
	ID       string
	RepoTags []string
	Size     int64
	Created  time.Time
	Labels   map[string]string
	Config   Config
}

// Config is the part of an image's configuration a commit carries over.
type Config struct {
	User       string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	Env        []string
}

// Import says how to make an image of a root filesystem.
type Import struct {
	Message string
	// Changes are Dockerfile instructions applied to the image (ENV,
	// CMD, LABEL).
	Changes []string
}

// Build is one classic-builder build.
type Build struct {
	Tag        string
	Dockerfile string // its path inside the build context
	BuildArgs  map[string]string
}

// Container is a build container: root, with only the capabilities the
// package managers need, under memory and process caps.
type Container struct {
	Name        string
	Image       string
	User        string
	Entrypoint  []string
	Cmd         []string
	WorkingDir  string
	CapAdd      []string // on top of none: every other capability is dropped
	MemoryBytes int64    // also the memory+swap cap
	PidsLimit   int64
}

// Commit says how to commit a container.
type Commit struct {
	Ref     string
	Message string
	Changes []string
}
