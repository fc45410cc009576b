package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// untar writes the flattened image tar r into dir. Every file operation
// goes through an os.Root, so no entry (a "..", a symlink an earlier entry
// left) can write outside dir. Owners, modes (set-id bits included, inert
// under no_new_privs) and times are kept; device nodes and fifos are left
// out: the runtime makes the devices a sandbox gets.
func untar(ctx context.Context, r io.Reader, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	tr := tar.NewReader(r)
	type dirMeta struct {
		name string
		hdr  *tar.Header
	}
	var dirs []dirMeta
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read image layers: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "/"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			continue
		}
		if err := ensureParent(root, name); err != nil {
			return err
		}
		if err := writeEntry(ctx, root, name, hdr, tr); err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			dirs = append(dirs, dirMeta{name, hdr})
		}
	}
	// Folders' modes and times last: writing into a folder changes its
	// time, and a read-only folder would refuse its entries.
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if err := root.Chmod(d.name, fileMode(d.hdr)); err != nil {
			return fmt.Errorf("unpack %s: %w", d.name, err)
		}
		_ = root.Chtimes(d.name, d.hdr.ModTime, d.hdr.ModTime)
	}
	return nil
}

func ensureParent(root *os.Root, name string) error {
	parent := path.Dir(name)
	if parent == "." {
		return nil
	}
	if err := root.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	return nil
}

// fileMode is the header's permission and set-id bits as an fs.FileMode.
func fileMode(hdr *tar.Header) fs.FileMode {
	m := fs.FileMode(hdr.Mode & 0o777) //nolint:gosec // masked to the permission bits
	if hdr.Mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if hdr.Mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if hdr.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

func writeEntry(ctx context.Context, root *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	if hdr.Typeflag != tar.TypeDir {
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return root.Lchown(name, hdr.Uid, hdr.Gid)
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		err = copyCtx(ctx, f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		// chown clears set-id bits: the mode comes after it.
		if err := root.Lchown(name, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
		if err := root.Chmod(name, fileMode(hdr)); err != nil {
			return err
		}
		return root.Chtimes(name, hdr.ModTime, hdr.ModTime)
	case tar.TypeSymlink:
		if err := root.Symlink(hdr.Linkname, name); err != nil {
			return err
		}
		return root.Lchown(name, hdr.Uid, hdr.Gid)
	case tar.TypeLink:
		return root.Link(path.Clean(strings.TrimPrefix(hdr.Linkname, "/")), name)
	default:
		return nil // devices, fifos: not part of a sandbox's root
	}
}
