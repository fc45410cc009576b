package imagetest

import (
	"context"
	"fmt"
	"io"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// FailingBuilds is an image engine whose build containers fail at a step
// of the build script: the script announces Step, prints Output and exits
// 1, as pip does when no source has a package. Only the runner image
// (RunnerRef, RunnerID) exists. With Hold set, a build waits for it to be
// closed (or its context) first. Any call a failing build does not make
// panics (the nil Engine).
type FailingBuilds struct {
	imageapi.Engine
	RunnerRef, RunnerID string
	// Step is the failing step's index in the build script (3 is pip
	// install for a skill with Python packages only); Output its last
	// lines.
	Step   int
	Output string
	Hold   chan struct{}
	// Started receives the build container's name as each build starts;
	// buffered, it must have room for every build a test starts.
	Started chan string
}

// NewFailingBuilds is a FailingBuilds whose pip finds no package name.
func NewFailingBuilds(runnerRef, runnerID, name string) *FailingBuilds {
	return &FailingBuilds{RunnerRef: runnerRef, RunnerID: runnerID, Step: 3,
		Output: "ERROR: No matching distribution found for " + name, Started: make(chan string, 16)}
}

// Client is an images.Client building on f.
func (f *FailingBuilds) Client() *images.Client {
	return images.New(func() (images.Engine, error) { return f, nil })
}

// Ping answers.
func (f *FailingBuilds) Ping(context.Context) error { return nil }

// ImageInspect finds the runner image only.
func (f *FailingBuilds) ImageInspect(_ context.Context, ref string) (imageapi.Image, error) {
	if ref == f.RunnerRef || ref == f.RunnerID {
		return imageapi.Image{ID: f.RunnerID}, nil
	}
	return imageapi.Image{}, fmt.Errorf("image %s: %w", ref, imageapi.ErrNotFound)
}

// ContainerRemove finds nothing to remove.
func (f *FailingBuilds) ContainerRemove(context.Context, string) error { return nil }

// ContainerCreate names the container by its name.
func (f *FailingBuilds) ContainerCreate(_ context.Context, c imageapi.Container) (string, error) {
	return c.Name, nil
}

// ContainerCopyTo reads the build inputs.
func (f *FailingBuilds) ContainerCopyTo(_ context.Context, _, _ string, content io.Reader) error {
	_, err := io.Copy(io.Discard, content)
	return err
}

// ContainerRun fails the build at Step.
func (f *FailingBuilds) ContainerRun(ctx context.Context, id string, stdout, _ io.Writer) (int, error) {
	f.Started <- id
	if f.Hold != nil {
		select {
		case <-f.Hold:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
	_, _ = fmt.Fprintf(stdout, "@@sandboxrun-step %d\nLooking in links: /tmp/sandboxrun-build/find-links/0\n%s\n", f.Step, f.Output)
	return 1, nil
}
