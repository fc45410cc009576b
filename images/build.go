package images

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/docker/docker/pkg/stringid"
)

// buildRequest is one `docker build` with a generated context.
type buildRequest struct {
	tag        string
	dockerfile []byte
	// files are written into the build context; each is executable
	// because the legacy builder's COPY has no --chmod.
	files     map[string][]byte
	buildArgs map[string]string
	labels    map[string]string
	// baseID is the FROM image; it is never removed when cleaning up.
	baseID string
}

// buildImage runs `docker build` in a throwaway context directory that holds
// only the Dockerfile and req.files, so nothing else from the caller's tree
// is sent to the daemon.
//
// The legacy builder is used on purpose (DOCKER_BUILDKIT=0): it works on
// every engine without the buildx plugin, which these build hosts lack.
// --rm --force-rm remove its intermediate containers even when a step fails;
// the intermediate images of the steps that did succeed are removed here,
// so a failed build leaves no nameless image behind.
func buildImage(ctx context.Context, req buildRequest, rep *reporter) (string, error) {
	dir, err := os.MkdirTemp("", "sandboxrun-build-")
	if err != nil {
		return "", fmt.Errorf("creating the build context: %w", err)
	}
	defer os.RemoveAll(dir)
	dockerfile, err := withLabels(req.dockerfile, req.labels)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), dockerfile, 0o600); err != nil {
		return "", fmt.Errorf("writing the build context: %w", err)
	}
	for name, data := range req.files {
		// COPY keeps this mode in the image, where uid 65532 must be able
		// to execute the file.
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil { //nolint:gosec // see above
			return "", fmt.Errorf("writing the build context: %w", err)
		}
	}

	args := []string{"build", "--rm", "--force-rm", "--file", filepath.Join(dir, "Dockerfile"), "--tag", req.tag}
	for _, k := range sortedKeys(req.buildArgs) {
		args = append(args, "--build-arg", k+"="+req.buildArgs[k])
	}
	args = append(args, dir)

	steps := &stepIDs{}
	out := rep.output()
	err = run(ctx, cmdSpec{
		name:   dockerProgram,
		args:   args,
		env:    []string{"DOCKER_BUILDKIT=0"},
		stdout: io.MultiWriter(steps, out),
		stderr: out,
	})
	if err != nil {
		removeStepImages(ctx, steps.list(), req.baseID)
		return "", fmt.Errorf("building %s: %w", req.tag, err)
	}
	info, err := inspectImage(ctx, req.tag)
	if err != nil {
		return "", fmt.Errorf("inspecting %s after building it: %w", req.tag, err)
	}
	return info.ID, nil
}

// withLabels appends the labels to the build context's copy of the
// Dockerfile as a single LABEL instruction. `docker build --label` would do
// the same job, but the legacy builder runs every --label as a step of its
// own, each committing an image (nine labels cost ~45 s on a small host).
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
func removeStepImages(ctx context.Context, ids []string, baseID string) {
	for i := len(ids) - 1; i >= 0; i-- {
		if stringid.TruncateID(ids[i]) == stringid.TruncateID(baseID) {
			continue
		}
		_ = removeIfUntagged(ctx, ids[i])
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
