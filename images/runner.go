package images

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

const (
	// DefaultBase is the registry image the runner is built on when one
	// can be pulled.
	DefaultBase = "debian:bookworm-slim"
	// pullTimeout bounds the registry attempt: with no registry a pull
	// fails at once or hangs on DNS/TCP, and the fallback should not wait
	// for minutes.
	pullTimeout = 30 * time.Second
)

// RunnerOptions says what runner image to build and from what.
type RunnerOptions struct {
	// Tag names the image, e.g. "sandboxrun/runner:0.1.0". Required.
	Tag string
	// Version goes into the org.opencontainers.image.version label. Required.
	Version string
	// Dockerfile is the content of Dockerfile.runner (the root package
	// embeds it). Required.
	Dockerfile []byte
	// InitBinary is the path of a statically linked sandbox-init
	// (CGO_ENABLED=0 go build ./cmd/sandbox-init). Required.
	InitBinary string
	// Base is the registry image tried first; default DefaultBase. When it
	// is neither local nor pullable, a Debian base is bootstrapped from the
	// host's apt sources instead.
	Base string
	// Progress receives human-readable progress lines; nil discards them.
	Progress io.Writer
	// Force rebuilds even when content hashes match: the runner, and the
	// bootstrapped base when one is used (which also refreshes its Debian
	// packages). A Base already present locally is used as it is.
	Force bool
	// Source and Revision fill the org.opencontainers.image.source and
	// .revision labels; when empty they come from the running binary's
	// build information, if it has any.
	Source   string
	Revision string
}

// Image is a built (or found up to date) image.
type Image struct {
	// Ref is the tag, e.g. "sandboxrun/runner:0.1.0".
	Ref string
	// ID is the image ID ("sha256:...").
	ID string
	// ContentHash is the io.sandboxrun.content-hash label value.
	ContentHash string
	// Built is false when an up-to-date image was found and nothing was
	// built.
	Built bool
}

// baseImage is the image the runner is built FROM.
type baseImage struct {
	Ref string
	ID  string
}

// Validate checks the options before anything is run.
func (o RunnerOptions) Validate() error {
	if err := validateRef(o.Tag); err != nil {
		return fmt.Errorf("runner tag: %w", err)
	}
	if strings.TrimSpace(o.Version) == "" {
		return errors.New("runner version is empty: set RunnerOptions.Version (e.g. 0.1.0)")
	}
	if len(o.Dockerfile) == 0 {
		return errors.New("runner Dockerfile is empty: pass the content of Dockerfile.runner")
	}
	if o.Base != "" {
		if err := validateRef(o.Base); err != nil {
			return fmt.Errorf("base image: %w", err)
		}
	}
	return checkStaticBinary(o.InitBinary)
}

// checkStaticBinary refuses an init that is missing or dynamically linked:
// it would fail to start in the image with a confusing "no such file".
func checkStaticBinary(path string) error {
	const fix = "build it with `CGO_ENABLED=0 go build -o <path> ./cmd/sandbox-init`"
	if path == "" {
		return fmt.Errorf("sandbox-init binary path is empty: %s", fix)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("sandbox-init binary: %w: %s", err, fix)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("sandbox-init binary %s is not an executable file: %s", path, fix)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("sandbox-init binary %s is not a Linux executable (%w): %s with GOOS=linux", path, err, fix)
	}
	defer func() { _ = f.Close() }() // read-only; nothing to lose
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("sandbox-init binary %s is dynamically linked: %s", path, fix)
		}
	}
	return nil
}

// BuildRunner builds the runner image o.Tag unless an image with the same
// content hash already carries that tag. It resolves the base first: o.Base
// when present locally, else an up-to-date bootstrapped base, else a pull of
// o.Base, else a fresh debootstrap of the host's Debian release.
func (c *Client) BuildRunner(ctx context.Context, o RunnerOptions) (Image, error) {
	if o.Base == "" {
		o.Base = DefaultBase
	}
	if err := o.Validate(); err != nil {
		return Image{}, err
	}
	initBytes, err := os.ReadFile(o.InitBinary)
	if err != nil {
		return Image{}, fmt.Errorf("reading sandbox-init: %w", err)
	}
	rep := newReporter(o.Progress, nil)
	rep.stepf("building %s", o.Tag)
	if err := c.checkDocker(ctx); err != nil {
		return Image{}, err
	}
	base, err := c.resolveBase(ctx, o, rep)
	if err != nil {
		return Image{}, err
	}
	hash := runnerHash(o.Dockerfile, initBytes, base.ID)
	existing, err := c.inspectImage(ctx, o.Tag)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Image{}, err
	}
	if err == nil && existing.Labels[LabelContentHash] == hash && !o.Force {
		rep.stepf("%s is up to date (%s, content hash %s); nothing to build", o.Tag, ShortID(existing.ID), ShortID(hash))
		return Image{Ref: o.Tag, ID: existing.ID, ContentHash: hash, Built: false}, nil
	}
	started := time.Now()
	rep.stepf("building %s FROM %s (%s) with docker build", o.Tag, base.Ref, ShortID(base.ID))
	id, err := c.buildImage(ctx, buildRequest{
		tag:        o.Tag,
		dockerfile: o.Dockerfile,
		files:      map[string][]byte{"sandbox-init": initBytes},
		buildArgs:  map[string]string{"BASE": base.Ref},
		labels:     runnerLabels(o, base, hash, time.Now()),
		baseID:     base.ID,
	}, rep)
	if err != nil {
		return Image{}, err
	}
	if existing.ID != "" && existing.ID != id {
		if err := c.removeIfUntagged(ctx, existing.ID); err != nil {
			rep.stepf("note: could not remove the previous %s image %s: %v", o.Tag, ShortID(existing.ID), err)
		}
	}
	rep.stepf("built %s (%s) in %s", o.Tag, ShortID(id), rep.since(started))
	return Image{Ref: o.Tag, ID: id, ContentHash: hash, Built: true}, nil
}

// resolveBase finds or makes the image the runner is built FROM. An
// up-to-date bootstrapped base is preferred over a pull attempt so that a
// repeated build on a machine without a registry does not wait for the
// registry every time.
func (c *Client) resolveBase(ctx context.Context, o RunnerOptions, rep *reporter) (baseImage, error) {
	if info, err := c.inspectImage(ctx, o.Base); err == nil {
		rep.stepf("base: using local %s (%s)", o.Base, ShortID(info.ID))
		return baseImage{Ref: o.Base, ID: info.ID}, nil
	} else if !errors.Is(err, ErrNotFound) {
		return baseImage{}, err
	}

	plan, planErr := planBootstrap("/")
	if planErr == nil && !o.Force {
		info, err := c.inspectImage(ctx, plan.Tag)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return baseImage{}, err
		}
		if err == nil && info.Labels[LabelContentHash] == plan.Hash {
			rep.stepf("base: %s is not present locally; using the bootstrapped %s (%s), which is up to date", o.Base, plan.Tag, ShortID(info.ID))
			return baseImage{Ref: plan.Tag, ID: info.ID}, nil
		}
	}

	rep.stepf("base: %s is not present locally; trying `docker pull %s` (timeout %s)", o.Base, o.Base, pullTimeout)
	pullCtx, cancel := context.WithTimeout(ctx, pullTimeout)
	pullErr := c.pullImage(pullCtx, o.Base, rep.output())
	timedOut := errors.Is(pullCtx.Err(), context.DeadlineExceeded)
	cancel()
	if ctx.Err() != nil {
		return baseImage{}, fmt.Errorf("pulling %s: %w", o.Base, ctx.Err())
	}
	if pullErr == nil {
		info, err := c.inspectImage(ctx, o.Base)
		if err != nil {
			return baseImage{}, fmt.Errorf("inspecting %s after pulling it: %w", o.Base, err)
		}
		rep.stepf("base: pulled %s (%s)", o.Base, ShortID(info.ID))
		return baseImage{Ref: o.Base, ID: info.ID}, nil
	}

	reason := pullFailureReason(pullErr, timedOut)
	if planErr != nil {
		return baseImage{}, fmt.Errorf("no base image: pulling %s failed (%s), and bootstrapping one is not possible: %w", o.Base, reason, planErr)
	}
	rep.stepf("no registry reachable (%s); bootstrapping Debian %s from this host's apt sources with debootstrap", reason, plan.Suite)
	return c.bootstrapBase(ctx, plan, rep)
}

func pullFailureReason(err error, timedOut bool) string {
	if timedOut {
		return fmt.Sprintf("docker pull did not finish within %s", pullTimeout)
	}
	var cmdErr *CommandError
	if errors.As(err, &cmdErr) {
		if tail := lastLines(cmdErr.StderrTail, 1); tail != "" {
			return tail
		}
	}
	return err.Error()
}
