package skillstore

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/fsmode"
)

// zipMembers spools r (already capped) to the file spool, since a zip's
// directory is at its end, and walks its members. The spool is the
// caller's to remove.
func zipMembers(r io.Reader, spool string) (func(func(member) error) error, error) {
	f, err := os.OpenFile(spool, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spooling the zip: %w", err)
	}
	n, err := io.Copy(f, r)
	if err != nil {
		_ = f.Close()
		if errors.As(err, new(*LimitError)) {
			return nil, err
		}
		return nil, fmt.Errorf("spooling the zip: %w", err)
	}
	zr, err := zip.NewReader(f, n)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %w: send a zip archive", ErrBadArchive, err)
	}
	return func(yield func(member) error) error {
		defer func() { _ = f.Close() }()
		for i, zf := range zr.File {
			e, err := zipEntry(zf)
			if err != nil {
				return fmt.Errorf("%w: entry %d (%q): %w", ErrBadArchive, i+1, zf.Name, err)
			}
			if err := yield(member{entry: e, open: zf.Open}); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// zipEntry reads the guard's view of a zip member; a link's target is its
// content.
func zipEntry(zf *zip.File) (fsroot.ArchiveEntry, error) {
	mode := zf.Mode()
	e := fsroot.ArchiveEntry{Name: zf.Name, Mode: int64(mode.Perm())}
	if mode&fs.ModeSetuid != 0 {
		e.Mode |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		e.Mode |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		e.Mode |= 0o1000
	}
	switch {
	case mode.IsDir():
		e.Kind = fsroot.EntryDir
	case mode&fs.ModeSymlink != 0:
		e.Kind = fsroot.EntrySymlink
		rc, err := zf.Open()
		if err != nil {
			return e, err
		}
		defer func() { _ = rc.Close() }()
		target, err := io.ReadAll(io.LimitReader(rc, maxLinkTarget+1))
		if err != nil {
			return e, err
		}
		if len(target) > maxLinkTarget {
			return e, fmt.Errorf("a link's target is longer than %d bytes", maxLinkTarget)
		}
		e.Linkname = string(target)
	case mode.IsRegular():
		e.Kind = fsroot.EntryFile
	default:
		e.Kind, e.Type = fsroot.EntryOther, fsmode.Describe(mode)
	}
	return e, nil
}
