package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Skill images are made by creating, starting and committing a container
// rather than by a build: the classic builder (the only one every engine
// has) records build arguments in `docker history` and puts anything in the
// build context into a layer, and neither an index URL with a token nor a
// wheelhouse belongs in the image. Here the package sources are copied into
// the container's scratch folder, which the build script deletes, so the
// one committed layer holds only what was installed.

// Bounds of a build container: it runs the package managers on the skill's
// behalf, so it gets caps like a run's, sized for installing.
const (
	buildMemory  = 2 << 30
	buildPids    = 1024
	buildTimeout = 20 * time.Minute
)

// stepOutputLines bounds the output quoted in a SkillBuildError.
const stepOutputLines = 25

// buildSkill makes p's image. The caller holds the build lock for p.ref.
func (c *Client) buildSkill(ctx context.Context, p skillPlan, rep *reporter) (Image, error) {
	started := time.Now()
	rep.stepf("building %s for skill %s FROM %s (%s)", p.ref, p.opts.Skill, p.opts.Runner, ShortID(p.runnerID))
	e, err := c.engine()
	if err != nil {
		return Image{}, err
	}
	runner, err := c.inspectImage(ctx, p.runnerID)
	if err != nil {
		return Image{}, fmt.Errorf("reading the configuration of %s: %w", p.runnerID, err)
	}
	previous, err := c.inspectImage(ctx, p.ref)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Image{}, err
	}
	script, steps := skillScript(p)
	changes, err := commitChanges(runner.Config, skillLabels(p, skillImageTime()))
	if err != nil {
		return Image{}, err
	}

	name := buildContainerName(p.ref)
	// A container of this name is left over from a build that was killed
	// before it could clean up; the lock says no live build owns it.
	if err := c.removeContainer(ctx, name); err != nil {
		return Image{}, err
	}
	defer func() { _ = c.removeContainer(ctx, name) }() // best effort; the next build of this ref retries
	id, err := e.ContainerCreate(ctx, imageapi.Container{
		Name: name, Image: p.runnerID, User: "0:0", Entrypoint: []string{"/bin/sh"}, Cmd: []string{buildScript}, WorkingDir: "/",
		// Only the capabilities apt and dpkg need as root (owners, modes,
		// file capabilities, the _apt user); pip never gets any. Every
		// other one is dropped, no new privileges, no logs kept.
		CapAdd:      []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "SETFCAP"},
		MemoryBytes: buildMemory, PidsLimit: buildPids,
	})
	if err != nil {
		return Image{}, fmt.Errorf("creating the build container for %s: %w", p.ref, err)
	}
	if err := copyBuildInputs(ctx, e, id, name, script, p.findLinks); err != nil {
		return Image{}, err
	}

	tracker := newStepTracker(rep, steps)
	stdout, stderr := tracker.stream(), tracker.stream()
	bctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	err = runBuildContainer(bctx, e, id, name, stdout, stderr)
	if bctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		err = fmt.Errorf("the build ran past its %s limit: %w", buildTimeout, err)
	}
	stdout.flush()
	stderr.flush()
	if err != nil {
		return Image{}, tracker.failure(ctx, p, err)
	}
	tracker.finish()

	if _, err := e.ContainerCommit(ctx, id, imageapi.Commit{
		Ref: p.ref, Message: "sandboxrun: dependencies of skill " + sanitizeComment(p.opts.Skill), Changes: changes,
	}); err != nil {
		return Image{}, fmt.Errorf("committing %s: %w", p.ref, err)
	}
	info, err := c.inspectImage(ctx, p.ref)
	if err != nil {
		return Image{}, fmt.Errorf("inspecting %s after building it: %w", p.ref, err)
	}
	if previous.ID != "" && previous.ID != info.ID {
		if err := c.removeIfUntagged(ctx, previous.ID); err != nil {
			rep.stepf("note: could not remove the previous %s image %s: %v", p.ref, ShortID(previous.ID), err)
		}
	}
	added := ""
	if runner, err := c.inspectImage(ctx, p.runnerID); err == nil && info.Size >= runner.Size {
		added = fmt.Sprintf("; it adds %s to the runner image", size.Format(info.Size-runner.Size))
	}
	rep.stepf("built %s (%s) in %s%s", p.ref, ShortID(info.ID), rep.since(started), added)
	return Image{Ref: p.ref, ID: info.ID, ContentHash: p.contentHash, Built: true}, nil
}

// buildContainerName is fixed per image reference, so a leftover of a killed
// build is found (and removed) by the next build of the same image.
func buildContainerName(ref string) string {
	return "sandboxrun-build-" + strings.NewReplacer("/", "-", ":", "-").Replace(strings.TrimPrefix(ref, "sandboxrun/"))
}

// BuildContainerPrefix starts the name of every skill build container.
const BuildContainerPrefix = "sandboxrun-build-"

// removeContainer force-removes a container by exact name when it exists.
// It runs detached from ctx's cancellation because it is cleanup.
func (c *Client) removeContainer(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	e, err := c.engine()
	if err != nil {
		return err
	}
	if err := e.ContainerRemove(ctx, name); err != nil {
		return fmt.Errorf("removing the build container %s: %w", name, err)
	}
	return nil
}

// runBuildContainer starts the build container and relays its output
// until it stops. A non-zero exit is a *CommandError with its code, which
// the step tracker turns into the step that failed.
func runBuildContainer(ctx context.Context, e Engine, id, name string, stdout, stderr io.Writer) error {
	code, err := e.ContainerRun(ctx, id, stdout, stderr)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("running the build container %s: %w", name, errors.Join(ctxErr, err))
	}
	if err != nil {
		return fmt.Errorf("running the build container %s: %w", name, err)
	}
	if code != 0 {
		return &CommandError{Command: []string{"build container", name}, ExitCode: code, Err: fmt.Errorf("exit status %d", code)}
	}
	return nil
}

// copyBuildInputs streams the script and the local find-links folders into
// the created container as one tar archive, which also works when the
// daemon is on another machine.
func copyBuildInputs(ctx context.Context, e Engine, id, name, script string, links []findLinksSource) error {
	pr, pw := io.Pipe()
	writeErr := make(chan error, 1)
	go func() {
		err := writeBuildTar(pw, script, links)
		_ = pw.CloseWithError(err) // the reader sees err; it is also returned below
		writeErr <- err
	}()
	err := e.ContainerCopyTo(ctx, id, "/tmp", pr)
	_ = pr.CloseWithError(io.ErrClosedPipe) // unblocks the writer if the copy stopped reading
	werr := <-writeErr
	if err != nil {
		return fmt.Errorf("copying the build inputs into %s: %w", name, err)
	}
	return werr
}

func writeBuildTar(w io.Writer, script string, links []findLinksSource) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o700, ModTime: now})
	}
	base := strings.TrimPrefix(buildDir, "/tmp/")
	if err := dir(base); err != nil {
		return fmt.Errorf("writing the build inputs: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: base + "/build.sh", Mode: 0o700, Size: int64(len(script)), ModTime: now}); err != nil {
		return fmt.Errorf("writing the build inputs: %w", err)
	}
	if _, err := io.WriteString(tw, script); err != nil {
		return fmt.Errorf("writing the build inputs: %w", err)
	}
	if err := dir(base + "/find-links"); err != nil {
		return fmt.Errorf("writing the build inputs: %w", err)
	}
	for i, l := range links {
		if !l.local {
			continue
		}
		sub := base + "/find-links/" + strconv.Itoa(i)
		if err := dir(sub); err != nil {
			return fmt.Errorf("writing the build inputs: %w", err)
		}
		for _, name := range l.files {
			if err := addFile(tw, filepath.Join(l.value, name), sub+"/"+name, now); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the build inputs: %w", err)
	}
	return nil
}

func addFile(tw *tar.Writer, path, name string, now time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--find-links: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("--find-links: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: fi.Size(), ModTime: now}); err != nil {
		return fmt.Errorf("writing the build inputs: %w", err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return where.Errorf("--find-links: copying %s: %w", where.Path(path), err)
	}
	return nil
}

// stepTracker turns the build script's step markers into progress lines
// with durations, relays everything else indented, and keeps the tail of
// the running step's output for the error when it fails.
type stepTracker struct {
	mu      sync.Mutex
	rep     *reporter
	steps   []buildStep
	current int
	since   time.Time
	tail    *tailBuffer
}

func newStepTracker(rep *reporter, steps []buildStep) *stepTracker {
	return &stepTracker{rep: rep, steps: steps, current: -1, tail: &tailBuffer{max: stderrTailBytes}}
}

func (t *stepTracker) stream() *stepStream { return &stepStream{t: t} }

func (t *stepTracker) line(l []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rest, ok := bytes.CutPrefix(l, []byte(stepMarker)); ok {
		if i, err := strconv.Atoi(strings.TrimSpace(string(rest))); err == nil && i >= 0 && i < len(t.steps) {
			t.doneLocked()
			t.current, t.since = i, time.Now()
			t.tail = &tailBuffer{max: stderrTailBytes}
			t.rep.stepf("%s", t.steps[i].desc)
			return
		}
	}
	// dpkg and pip redraw progress with carriage returns; keep what a
	// terminal would end up showing.
	if i := bytes.LastIndexByte(bytes.TrimRight(l, "\r\n"), '\r'); i >= 0 {
		l = l[i+1:]
	}
	_, _ = t.tail.Write(l)
	_, _ = t.rep.output().Write(l)
}

func (t *stepTracker) doneLocked() {
	if t.current >= 0 {
		t.rep.stepf("%s: done in %s", t.steps[t.current].name, formatDuration(time.Since(t.since)))
	}
}

func (t *stepTracker) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.doneLocked()
	t.current = -1
}

// failure describes a failed build container run as the step that failed
// with its output.
func (t *stepTracker) failure(ctx context.Context, p skillPlan, err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	step, hint, name := "starting the build container", "", ""
	if t.current >= 0 {
		step, hint, name = t.steps[t.current].desc, t.steps[t.current].hint, t.steps[t.current].name
	}
	cause, exit := err, 0
	var cmdErr *CommandError
	switch {
	case ctx.Err() != nil:
		cause, hint = ctx.Err(), ""
	case errors.As(err, &cmdErr) && cmdErr.ExitCode > 0 && t.current >= 0:
		cause, exit = fmt.Errorf("%s exited with status %d", t.steps[t.current].name, cmdErr.ExitCode), cmdErr.ExitCode
	}
	return &SkillBuildError{
		Skill:    p.opts.Skill,
		Ref:      p.ref,
		Step:     step,
		StepName: name,
		ExitCode: exit,
		Output:   lastLinesRaw(t.tail.String(), stepOutputLines),
		Hint:     hint,
		Err:      cause,
	}
}

// stepStream is one of the container's output streams, split into lines.
type stepStream struct {
	t       *stepTracker
	partial []byte
}

func (s *stepStream) Write(p []byte) (int, error) {
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.t.line(s.partial[:i+1])
		s.partial = s.partial[i+1:]
	}
	return len(p), nil
}

// flush passes on a last line without a newline.
func (s *stepStream) flush() {
	if len(s.partial) > 0 {
		s.t.line(append(s.partial, '\n'))
		s.partial = nil
	}
}

// lastLinesRaw returns the last n lines of s, newlines kept.
func lastLinesRaw(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
