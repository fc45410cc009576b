package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// buildRequest is one image build with a generated context.
type buildRequest struct {
	tag        string
	dockerfile []byte
	// files are written into the build context, executable (contextTar).
	files     map[string][]byte
	buildArgs map[string]string
	labels    map[string]string
	// baseID is the FROM image; it is never removed when cleaning up.
	baseID string
}

// buildImage builds req with the engine's classic builder from a build
// context made in memory that holds only the Dockerfile and req.files, so
// nothing else from the caller's tree is sent to the daemon.
//
// The classic builder is used on purpose: it works on every engine without
// the buildx plugin, which these build hosts lack. Its intermediate
// containers are removed even when a step fails; the intermediate images
// of the steps that did succeed are removed here, so a failed build leaves
// no nameless image behind.
func (c *Client) buildImage(ctx context.Context, req buildRequest, rep *reporter) (string, error) {
	e, err := c.engine()
	if err != nil {
		return "", err
	}
	dockerfile, err := withLabels(req.dockerfile, req.labels)
	if err != nil {
		return "", err
	}
	buildContext, err := contextTar(dockerfile, req.files)
	if err != nil {
		return "", err
	}
	steps := &stepIDs{}
	id, err := e.ImageBuild(ctx, bytes.NewReader(buildContext),
		imageapi.Build{Tag: req.tag, Dockerfile: "Dockerfile", BuildArgs: req.buildArgs},
		io.MultiWriter(steps, rep.output()))
	if err != nil {
		c.removeStepImages(ctx, steps.list(), req.baseID)
		var step *imageapi.StepError
		if errors.As(err, &step) {
			// A failed step is the build's own failure: say it as a
			// failed command with its exit code, as callers expect.
			err = &CommandError{Command: []string{"docker", "build", "--tag", req.tag}, ExitCode: step.Code, StderrTail: step.Message, Err: err}
		}
		return "", fmt.Errorf("building %s: %w", req.tag, err)
	}
	info, err := c.inspectImage(ctx, req.tag)
	if err != nil {
		return "", fmt.Errorf("inspecting %s after building it: %w", req.tag, err)
	}
	if id != "" && id != info.ID {
		return "", fmt.Errorf("building %s: the build made %s but the tag names %s", req.tag, ShortID(id), ShortID(info.ID))
	}
	return info.ID, nil
}

// contextTar is a build context of the Dockerfile and files. Each file is
// executable because the classic builder's COPY has no --chmod, and COPY
// keeps this mode in the image, where the sandbox user must be able to
// execute it.
func contextTar(dockerfile []byte, files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("Dockerfile", 0o600, dockerfile); err != nil {
		return nil, fmt.Errorf("writing the build context: %w", err)
	}
	for _, name := range sortedKeys(files) {
		if err := add(name, 0o755, files[name]); err != nil {
			return nil, fmt.Errorf("writing the build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the build context: %w", err)
	}
	return buf.Bytes(), nil
}

// withLabels appends the labels to the build context's copy of the
// Dockerfile as a single LABEL instruction. A build's labels option would
// do the same job, but the classic builder runs every label as a step of
// its own, each committing an image (nine labels cost ~45 s on a small host).
func withLabels(dockerfile []byte, labels map[string]string) ([]byte, error) {
	if len(labels) == 0 {
		return dockerfile, nil
	}
	instr, err := labelInstruction(labels)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), dockerfile...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "\n# Added by sandboxrun at build time.\n"...)
	return append(out, instr+"\n"...), nil
}

// removeStepImages removes the images the steps of a failed build
// committed, newest first so each is childless when its turn comes. Layers
// still shared with an earlier, tagged build are kept by the daemon; that
// refusal is expected and not an error worth reporting.
func (c *Client) removeStepImages(ctx context.Context, ids []string, baseID string) {
	for i := len(ids) - 1; i >= 0; i-- {
		if ShortID(ids[i]) == ShortID(baseID) {
			continue
		}
		_ = c.removeIfUntagged(ctx, ids[i])
	}
}

// stepIDs collects the image IDs the legacy builder prints after each step
// (" ---> 0123456789ab").
type stepIDs struct {
	mu      sync.Mutex
	partial []byte
	ids     []string
}

var stepIDLine = regexp.MustCompile(`^ ---> ([0-9a-f]{12})$`)

func (s *stepIDs) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimRight(s.partial[:i], "\r")
		if m := stepIDLine.FindSubmatch(line); m != nil {
			s.ids = append(s.ids, string(m[1]))
		}
		s.partial = s.partial[i+1:]
	}
	return len(p), nil
}

func (s *stepIDs) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}
