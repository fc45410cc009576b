package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	debootstrapVariant = "minbase"
	baseRepository     = "sandboxrun/base"
	// basePath is the PATH a Debian image carries; docker import starts
	// from an empty config.
	basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// logTailLines is how much of debootstrap's log a BootstrapError shows.
	logTailLines = 25
)

// basePackages are bootstrapped into the base so the runner build finds
// everything already there and needs no network. Keep in sync with
// Dockerfile.runner.
var basePackages = []string{"python3", "nodejs", "jq", "git", "ca-certificates", "bash"}

// bootstrapPlan is what debootstrap will be asked for, derived from the
// host's apt sources.
type bootstrapPlan struct {
	Mirror     string
	Suite      string
	Components []string
	Include    []string
	// Keyring is the Signed-By keyring of the chosen entry when it is a
	// file; empty lets debootstrap use the suite's default keyring.
	Keyring string
	// Source is the apt file the mirror was read from, for messages.
	Source string
	Tag    string
	Hash   string
}

// planBootstrap reads the apt sources under root (the host's: "/") and
// picks the archive to bootstrap from.
func planBootstrap(root string) (bootstrapPlan, error) {
	sources, read, err := hostAptSources(root)
	if err != nil {
		return bootstrapPlan{}, &BootstrapError{Step: "reading the host's apt sources", Err: err}
	}
	src, err := pickArchive(sources)
	if err != nil {
		return bootstrapPlan{}, &BootstrapError{
			Step: "reading the host's apt sources",
			Err: fmt.Errorf("%w (read: %s): add an entry such as `deb http://deb.debian.org/debian bookworm main` under /etc/apt/sources.list.d/, or make a registry reachable so the base can be pulled",
				err, strings.Join(nonEmpty(read, "none found"), ", ")),
		}
	}
	p := bootstrapPlan{
		Mirror:     src.URI,
		Suite:      src.Suite,
		Components: []string{"main"},
		Include:    append([]string(nil), basePackages...),
		Source:     src.File,
		Tag:        baseRepository + ":" + src.Suite,
	}
	if src.SignedBy != "" {
		if fi, err := os.Stat(filepath.Join(root, src.SignedBy)); err == nil && fi.Mode().IsRegular() {
			p.Keyring = src.SignedBy
		}
	}
	p.Hash = baseHash(p)
	return p, nil
}

func nonEmpty(list []string, placeholder string) []string {
	if len(list) == 0 {
		return []string{placeholder}
	}
	return list
}

// debootstrapArgs builds the debootstrap command line. Release signatures
// are always checked (--force-check-gpg): without it debootstrap silently
// skips verification when it finds no keyring.
func debootstrapArgs(p bootstrapPlan, target string) []string {
	args := []string{
		"--variant=" + debootstrapVariant,
		"--components=" + strings.Join(p.Components, ","),
		"--include=" + strings.Join(p.Include, ","),
		"--force-check-gpg",
	}
	if p.Keyring != "" {
		args = append(args, "--keyring="+p.Keyring)
	}
	return append(args, p.Suite, target, p.Mirror)
}

// bootstrapBase builds the base image with debootstrap and docker import
// and tags it p.Tag. The work directory is removed on every path, including
// cancellation.
func (c *Client) bootstrapBase(ctx context.Context, p bootstrapPlan, rep *reporter) (_ baseImage, err error) {
	if os.Geteuid() != 0 {
		return baseImage{}, &BootstrapError{
			Step: "checking privileges",
			Err:  errors.New("debootstrap must run as root: run `sudo sandboxrun images build` (or `sudo make images`), or make a registry reachable so the base can be pulled"),
		}
	}
	debootstrap, err := ensureDebootstrap(ctx, rep)
	if err != nil {
		return baseImage{}, err
	}
	workDir, err := os.MkdirTemp(scratchDir(), "sandboxrun-debootstrap-")
	if err != nil {
		return baseImage{}, &BootstrapError{Step: "creating a work directory", Err: err}
	}
	defer func() {
		if rmErr := removeTree(workDir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up the bootstrap directory: %w", rmErr))
		}
	}()
	target := filepath.Join(workDir, "rootfs")

	started := time.Now()
	rep.stepf("running debootstrap %s (%s, from %s) into %s; this downloads about 80 MB and takes a few minutes",
		p.Suite, p.Mirror, p.Source, target)
	out := rep.output()
	runErr := run(ctx, cmdSpec{name: debootstrap, args: debootstrapArgs(p, target), stdout: out, stderr: out})
	if runErr != nil {
		return baseImage{}, &BootstrapError{
			Step:    "running debootstrap",
			LogTail: fileTail(filepath.Join(target, "debootstrap", "debootstrap.log"), logTailLines),
			Err:     runErr,
		}
	}
	rep.stepf("debootstrap finished in %s; trimming the root filesystem (apt caches and lists, docs, host resolv.conf)", rep.since(started))
	if err := trimRootfs(target); err != nil {
		return baseImage{}, &BootstrapError{Step: "trimming the root filesystem", Err: err}
	}

	started = time.Now()
	rep.stepf("importing the root filesystem into Docker as %s", p.Tag)
	img, err := c.importRootfs(ctx, target, p)
	if err != nil {
		return baseImage{}, &BootstrapError{Step: "importing the root filesystem", Err: err}
	}
	rep.stepf("imported %s as %s in %s", ShortID(img.ID), p.Tag, rep.since(started))
	return img, nil
}

// ensureDebootstrap returns the debootstrap path, installing the package
// with apt-get when it is missing.
func ensureDebootstrap(ctx context.Context, rep *reporter) (string, error) {
	if p, err := lookPath("debootstrap"); err == nil {
		return p, nil
	}
	aptGet, err := lookPath("apt-get")
	if err != nil {
		return "", &BootstrapError{Step: "installing debootstrap", Err: errors.New("debootstrap is not installed and apt-get is not available: install debootstrap with this system's package manager and retry")}
	}
	rep.stepf("debootstrap is not installed; installing it: apt-get update && apt-get install -y debootstrap")
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	out := rep.output()
	for _, args := range [][]string{{"update"}, {"install", "-y", "debootstrap"}} {
		if err := run(ctx, cmdSpec{name: aptGet, args: args, env: env, stdout: out, stderr: out}); err != nil {
			return "", &BootstrapError{Step: "installing debootstrap", Err: fmt.Errorf("%w (install it by hand: `apt-get update && apt-get install -y debootstrap`)", err)}
		}
	}
	p, err := lookPath("debootstrap")
	if err != nil {
		return "", &BootstrapError{Step: "installing debootstrap", Err: fmt.Errorf("apt-get installed debootstrap but it is not in PATH: %w", err)}
	}
	return p, nil
}

// scratchDir is where the target directory goes. /tmp is often a small
// tmpfs mounted nodev or noexec, and debootstrap needs ~500 MB, device nodes
// and executables that run inside the target.
func scratchDir() string {
	if fi, err := os.Stat("/var/tmp"); err == nil && fi.IsDir() {
		return "/var/tmp"
	}
	return os.TempDir()
}

// fileTail returns the last n lines of a file, or "" when it cannot be read
// (debootstrap may have failed before creating its log).
func fileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
