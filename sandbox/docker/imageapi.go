package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// ImageAPI is package images' channel to the engine (imageapi.Engine) over
// the Engine API client, so that this package stays the only one that
// imports it. Its calls are the ones `docker build`, `docker import`,
// `docker create`/`start`/`commit` and friends make.
type ImageAPI struct {
	c *client.Client
}

var _ imageapi.Engine = (*ImageAPI)(nil)

// NewImageAPI connects to the engine named by the environment (DOCKER_HOST
// and friends), as the runner does.
func NewImageAPI() (*ImageAPI, error) {
	c, err := newEngineClient()
	if err != nil {
		return nil, err
	}
	return &ImageAPI{c: c}, nil
}

// imageErr maps "no such image/container" onto imageapi.ErrNotFound and an
// unreachable daemon onto ErrDockerUnavailable.
func imageErr(doing string, err error) error {
	if err == nil {
		return nil
	}
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%s: %w: %w", doing, imageapi.ErrNotFound, err)
	}
	return apiError(doing, err)
}

// Ping confirms that the daemon answers. Its error is the client's own:
// package images says what an unreachable daemon means and how to fix it.
func (a *ImageAPI) Ping(ctx context.Context) error {
	if _, err := a.c.Ping(ctx); err != nil {
		return fmt.Errorf("ping docker: %w", err)
	}
	return nil
}

// ImageInspect describes a local image.
func (a *ImageAPI) ImageInspect(ctx context.Context, ref string) (imageapi.Image, error) {
	in, err := a.c.ImageInspect(ctx, ref)
	if err != nil {
		return imageapi.Image{}, imageErr("inspect image "+ref, err)
	}
	img := imageapi.Image{ID: in.ID, RepoTags: in.RepoTags, Size: in.Size}
	if t, err := time.Parse(time.RFC3339Nano, in.Created); err == nil {
		img.Created = t
	}
	if c := in.Config; c != nil {
		img.Labels = c.Labels
		img.Config = imageapi.Config{User: c.User, Entrypoint: c.Entrypoint, Cmd: c.Cmd, WorkingDir: c.WorkingDir, Env: c.Env}
	}
	return img, nil
}

// ImageList lists the local images labelled label=value.
func (a *ImageAPI) ImageList(ctx context.Context, label, value string) ([]imageapi.Image, error) {
	list, err := a.c.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label+"="+value))})
	if err != nil {
		return nil, imageErr("list images", err)
	}
	out := make([]imageapi.Image, 0, len(list))
	for _, s := range list {
		out = append(out, imageapi.Image{ID: s.ID, RepoTags: s.RepoTags, Size: s.Size, Created: time.Unix(s.Created, 0), Labels: s.Labels})
	}
	return out, nil
}

// ImageTag points ref at id.
func (a *ImageAPI) ImageTag(ctx context.Context, id, ref string) error {
	return imageErr("tag image", a.c.ImageTag(ctx, id, ref))
}

// ImageRemove removes a tag or an image, as `docker image rm` does: its
// untagged parents go with it, and nothing is forced.
func (a *ImageAPI) ImageRemove(ctx context.Context, ref string) error {
	_, err := a.c.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
	return imageErr("remove image "+ref, err)
}

// ImagePull pulls ref anonymously, writing progress to out.
func (a *ImageAPI) ImagePull(ctx context.Context, ref string, out io.Writer) error {
	body, err := a.c.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return imageErr("pull "+ref, err)
	}
	defer body.Close()
	return relay(body, out, nil)
}

// ImageImport makes an untagged image of a root filesystem tar.
func (a *ImageAPI) ImageImport(ctx context.Context, rootfs io.Reader, o imageapi.Import) (string, error) {
	body, err := a.c.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, "",
		image.ImportOptions{Message: o.Message, Changes: o.Changes})
	if err != nil {
		return "", imageErr("import image", err)
	}
	defer body.Close()
	// The engine answers an import with a status message: the new ID.
	var id string
	err = relay(body, io.Discard, func(m *streamMessage) {
		if strings.HasPrefix(m.Status, "sha256:") {
			id = strings.TrimSpace(m.Status)
		}
	})
	if err != nil {
		return "", fmt.Errorf("import image: %w", err)
	}
	return id, nil
}

// ImageBuild builds with the classic builder: it needs no buildx plugin,
// which build hosts may lack. Intermediate containers are removed even
// when a step fails.
func (a *ImageAPI) ImageBuild(ctx context.Context, buildContext io.Reader, o imageapi.Build, out io.Writer) (string, error) {
	args := make(map[string]*string, len(o.BuildArgs))
	for k, v := range o.BuildArgs {
		args[k] = &v
	}
	res, err := a.c.ImageBuild(ctx, buildContext, build.ImageBuildOptions{
		Tags: []string{o.Tag}, Dockerfile: o.Dockerfile, BuildArgs: args,
		Remove: true, ForceRemove: true, Version: build.BuilderV1,
	})
	if err != nil {
		return "", imageErr("build "+o.Tag, err)
	}
	defer res.Body.Close()
	var id string
	err = relay(res.Body, out, func(m *streamMessage) {
		var aux struct{ ID string }
		if m.Aux != nil && json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
			id = aux.ID
		}
	})
	return id, err
}

// streamMessage is one message of the engine's JSON stream that answers a
// pull, an import or a build.
type streamMessage struct {
	Stream         string          `json:"stream"`
	Status         string          `json:"status"`
	ID             string          `json:"id"`
	ProgressDetail json.RawMessage `json:"progressDetail"`
	Aux            json.RawMessage `json:"aux"`
	Error          *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"errorDetail"`
	ErrorMessage string `json:"error"`
}

// relay writes the stream's text to out as the CLI prints it without a
// terminal (build output as it comes, one line per status, progress ticks
// left out), hands each message to seen, and returns the error the stream
// ends with: a *imageapi.StepError when it carries a step's exit code.
// The messages are decoded here rather than with the client's jsonmessage
// package, which links terminal handling the binary has no use for.
func relay(body io.Reader, out io.Writer, seen func(*streamMessage)) error {
	if out == nil {
		out = io.Discard
	}
	dec := json.NewDecoder(body)
	for {
		var m streamMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the engine's answer: %w", err)
		}
		switch {
		case m.Error != nil && m.Error.Code != 0:
			// The classic builder reports a failed RUN with its exit code.
			return &imageapi.StepError{Code: m.Error.Code, Message: m.Error.Message}
		case m.Error != nil:
			return errors.New(m.Error.Message)
		case m.ErrorMessage != "":
			return errors.New(m.ErrorMessage)
		}
		if seen != nil {
			seen(&m)
		}
		switch {
		case m.Stream != "":
			_, _ = io.WriteString(out, m.Stream)
		case m.Status != "" && len(m.ProgressDetail) <= len("{}"):
			if m.ID != "" {
				_, _ = fmt.Fprintf(out, "%s: %s\n", m.ID, m.Status)
			} else {
				_, _ = fmt.Fprintln(out, m.Status)
			}
		}
	}
}

// ContainerCreate creates a build container: every capability dropped but
// c.CapAdd, no new privileges, no logs kept, memory and processes capped.
func (a *ImageAPI) ContainerCreate(ctx context.Context, c imageapi.Container) (string, error) {
	res, err := a.c.ContainerCreate(ctx,
		&container.Config{Image: c.Image, User: c.User, Entrypoint: c.Entrypoint, Cmd: c.Cmd, WorkingDir: c.WorkingDir},
		&container.HostConfig{
			CapDrop: []string{"ALL"}, CapAdd: c.CapAdd,
			SecurityOpt: []string{"no-new-privileges"},
			LogConfig:   container.LogConfig{Type: "none"},
			Resources:   container.Resources{Memory: c.MemoryBytes, MemorySwap: c.MemoryBytes, PidsLimit: &c.PidsLimit},
		}, nil, nil, c.Name)
	if err != nil {
		return "", imageErr("create build container "+c.Name, err)
	}
	return res.ID, nil
}

// ContainerCopyTo extracts a tar archive into dir in the container.
func (a *ImageAPI) ContainerCopyTo(ctx context.Context, id, dir string, content io.Reader) error {
	return imageErr("copy into build container", a.c.CopyToContainer(ctx, id, dir, content, container.CopyToContainerOptions{}))
}

// ContainerRun attaches, starts and waits, as `docker start --attach`.
func (a *ImageAPI) ContainerRun(ctx context.Context, id string, stdout, stderr io.Writer) (int, error) {
	att, err := a.c.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return -1, imageErr("attach to build container", err)
	}
	defer att.Close()
	if err := a.c.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return -1, imageErr("start build container", err)
	}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		copied <- err
	}()
	waitC, errC := a.c.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case w := <-waitC:
		// The output ends with the container; read it to its end.
		if err := <-copied; err != nil && !errors.Is(err, io.EOF) {
			return -1, fmt.Errorf("read build container output: %w", err)
		}
		if w.Error != nil {
			return -1, fmt.Errorf("wait for build container: %s", w.Error.Message)
		}
		return int(w.StatusCode), nil
	case err := <-errC:
		// The caller reads stdout and stderr once this returns: end the
		// copy (closing the stream) and wait for it, so that no write
		// comes after.
		att.Close()
		cerr := <-copied
		_ = cerr // the wait's error is the one to report
		return -1, imageErr("wait for build container", err)
	}
}

// ContainerCommit makes an image of the container.
func (a *ImageAPI) ContainerCommit(ctx context.Context, id string, o imageapi.Commit) (string, error) {
	res, err := a.c.ContainerCommit(ctx, id, container.CommitOptions{Reference: o.Ref, Comment: o.Message, Changes: o.Changes})
	if err != nil {
		return "", imageErr("commit "+o.Ref, err)
	}
	return res.ID, nil
}

// ContainerRemove force-removes the container called name, if it exists.
func (a *ImageAPI) ContainerRemove(ctx context.Context, name string) error {
	list, err := a.c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", "^/"+name+"$"))})
	if err != nil {
		return imageErr("look for container "+name, err)
	}
	for _, c := range list {
		err := a.c.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return imageErr("remove container "+name, err)
		}
	}
	return nil
}
