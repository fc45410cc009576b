package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// dpkgSlimConfig keeps documentation out of packages installed later (per
// skill images) the same way trimRootfs removes it now. Copyright notices
// stay: they are the licences of what the image ships.
const dpkgSlimConfig = `# Written by sandboxrun: sandbox images carry no documentation.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
`

// aptSlimConfig makes apt in derived images install only what is asked for
// and skip translated package descriptions.
const aptSlimConfig = `// Written by sandboxrun.
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
`

// trimRootfs removes from a fresh debootstrap target what a container image
// should not carry: downloaded packages and index files (about 130 MB),
// logs of the bootstrap, documentation, and the host's resolv.conf and
// hostname, which debootstrap copies in and which would leak host details
// (Docker bind-mounts its own at run time).
//
// Every path is resolved inside root without following symlinks: the target
// contains absolute links that point into the host when read from outside.
func trimRootfs(root string) error {
	var errs []error
	emptyDirs := []string{
		"var/cache/apt/archives",
		"var/lib/apt/lists",
		"var/log/apt",
		"usr/share/man",
		"usr/share/info",
		"usr/share/groff",
		"usr/share/lintian",
		"usr/share/linda",
		"tmp",
	}
	for _, d := range emptyDirs {
		errs = append(errs, removeChildren(root, d, nil))
	}
	errs = append(errs, removeChildren(root, "usr/share/locale", map[string]bool{"locale.alias": true}))
	errs = append(errs, trimDocs(root))
	for _, f := range []string{
		"var/cache/apt/pkgcache.bin", "var/cache/apt/srcpkgcache.bin",
		"var/log/dpkg.log", "var/log/bootstrap.log", "var/log/alternatives.log",
		"var/cache/debconf/config.dat-old", "var/cache/debconf/templates.dat-old",
		"var/lib/dpkg/status-old", "var/lib/dpkg/diversions-old",
	} {
		errs = append(errs, removeInRoot(root, f))
	}
	for _, f := range []struct {
		rel  string
		data string
	}{
		{"etc/resolv.conf", ""},
		{"etc/hostname", ""},
		{"etc/dpkg/dpkg.cfg.d/90sandboxrun-slim", dpkgSlimConfig},
		{"etc/apt/apt.conf.d/90sandboxrun", aptSlimConfig},
	} {
		errs = append(errs, writeInRoot(root, f.rel, f.data))
	}
	return errors.Join(errs...)
}

// trimDocs empties /usr/share/doc/<pkg>/ except the copyright file.
func trimDocs(root string) error {
	docDir, err := joinInRoot(root, "usr/share/doc")
	if err != nil {
		return err
	}
	pkgs, err := os.ReadDir(docDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pkgs {
		if p.Type()&fs.ModeSymlink != 0 || !p.IsDir() {
			continue // links to another package's doc dir cost nothing
		}
		errs = append(errs, removeChildren(root, "usr/share/doc/"+p.Name(), map[string]bool{"copyright": true}))
	}
	return errors.Join(errs...)
}

// joinInRoot joins rel to root and refuses when any directory on the way
// is a symlink, so nothing outside root can be reached through one.
func joinInRoot(root, rel string) (string, error) {
	rel = filepath.Clean(rel)
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q is not inside the root filesystem", rel)
	}
	parts := strings.Split(rel, "/")
	cur := root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		if i == len(parts)-1 {
			break
		}
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(root, rel), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%s is a symlink; not following it out of the root filesystem", cur)
		}
	}
	return cur, nil
}

// removeChildren deletes what is in root/rel except the names in keep.
// Symlinked entries are removed as links, never followed.
func removeChildren(root, rel string, keep map[string]bool) error {
	dir, err := joinInRoot(root, rel)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if keep[e.Name()] {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

func removeInRoot(root, rel string) error {
	p, err := joinInRoot(root, rel)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writeInRoot replaces root/rel with a regular file holding data. The old
// entry is unlinked first and the new one created with O_EXCL|O_NOFOLLOW:
// debootstrap's etc/resolv.conf can be a symlink to an absolute host path,
// and writing through it would change the host's file.
func writeInRoot(root, rel, data string) error {
	p, err := joinInRoot(root, rel)
	if err != nil {
		return err
	}
	// These are image files: directories and configuration must be
	// readable by the unprivileged sandbox user, as in any Debian system.
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil { //nolint:gosec // image file modes, see above
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644) //nolint:gosec // image file modes, see above
	if err != nil {
		return err
	}
	_, werr := f.WriteString(data)
	return errors.Join(werr, f.Close())
}

// importRootfs streams root, archived by tar, into an image import. The
// image is imported untagged and tagged only once the whole stream made it,
// so a cut-off tar never ends up under the base's name.
func (c *Client) importRootfs(ctx context.Context, root string, p bootstrapPlan) (baseImage, error) {
	e, err := c.engine()
	if err != nil {
		return baseImage{}, err
	}
	labels := baseLabels(p, p.Hash, time.Now())
	labelChange, err := labelInstruction(labels)
	if err != nil {
		return baseImage{}, err
	}
	opts := imageapi.Import{
		Message: fmt.Sprintf("sandboxrun: debootstrap --variant=%s %s %s", debootstrapVariant, p.Suite, p.Mirror),
		Changes: []string{"ENV PATH=" + basePath, "ENV LANG=C.UTF-8", `CMD ["bash"]`, labelChange},
	}

	pr, pw := io.Pipe()
	tarDone := make(chan error, 1)
	go func() {
		// Device nodes are left out: Docker mounts its own /dev, and a
		// rootless daemon cannot create them on import. tar (not
		// archive/tar) keeps the xattrs and numeric owners debootstrap
		// set, as the host's own tools wrote them.
		err := run(ctx, cmdSpec{name: "tar", args: []string{
			"--numeric-owner", "--xattrs", "--xattrs-include=*",
			"--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*",
			"-C", root, "-cf", "-", ".",
		}, stdout: pw})
		_ = pw.CloseWithError(err) // a failed tar must not read as a complete archive
		tarDone <- err
	}()
	id, importErr := e.ImageImport(ctx, pr, opts)
	_ = pr.CloseWithError(io.ErrClosedPipe) // a tar still writing gets an error instead of blocking forever
	tarErr := <-tarDone

	if importErr != nil || tarErr != nil {
		err := errors.Join(importErr, tarErr)
		if id != "" {
			err = errors.Join(err, c.removeIfUntagged(ctx, id))
		}
		return baseImage{}, err
	}
	if !strings.HasPrefix(id, "sha256:") {
		return baseImage{}, fmt.Errorf("the image import answered %q instead of an image ID", id)
	}
	if err := c.retag(ctx, id, p.Tag); err != nil {
		return baseImage{}, err
	}
	return baseImage{Ref: p.Tag, ID: id}, nil
}

// retag points ref at id and removes the image ref pointed to before, if
// nothing else uses it. A failed tag removes id so no nameless image stays.
func (c *Client) retag(ctx context.Context, id, ref string) error {
	old, err := c.inspectImage(ctx, ref)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return errors.Join(err, c.removeIfUntagged(ctx, id))
	}
	if err := c.tagImage(ctx, id, ref); err != nil {
		return errors.Join(fmt.Errorf("tagging %s as %s: %w", ShortID(id), ref, err), c.removeIfUntagged(ctx, id))
	}
	if old.ID != "" && old.ID != id {
		// Best effort: an old base still under a runner stays until that
		// runner is rebuilt.
		_ = c.removeIfUntagged(ctx, old.ID)
	}
	return nil
}
