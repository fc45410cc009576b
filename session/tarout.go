package session

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// WriteTar streams the workspace as a tar: folders, regular files, and
// symlinks as symlinks (never followed); nothing else (fifos, sockets,
// devices a run may have made). Temp files are left out, and so is what is
// deeper than MaxDepth. It does not hold the session: a run writing
// meanwhile may make it fail (a file changed size), never make it read
// outside the workspace.
func (s *Store) WriteTar(owner, id string, w io.Writer) error {
	return s.read(owner, id, func(ws *os.Root) error {
		tw := tar.NewWriter(w)
		err := fsroot.Walk(ws, "", s.lim.MaxDepth, func(rel string, parent *os.Root, name string, fi fs.FileInfo) error {
			return tarEntry(tw, rel, parent, name, fi)
		})
		if err != nil {
			return fmt.Errorf("writing the tar of session %q: %w", id, err)
		}
		return tw.Close()
	})
}

func tarEntry(tw *tar.Writer, rel string, parent *os.Root, name string, fi fs.FileInfo) error {
	hdr := &tar.Header{Name: rel, ModTime: fi.ModTime()}
	switch {
	case fi.IsDir():
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, rel+"/", fsroot.DirPerm
		return tw.WriteHeader(hdr)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := parent.Readlink(name)
		if err != nil {
			return nil // gone since the listing
		}
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
		return tw.WriteHeader(hdr)
	case !fi.Mode().IsRegular():
		return nil
	}
	f, err := fsroot.OpenNoFollow(parent, name, os.O_RDONLY, 0)
	if err != nil {
		return nil // replaced by a link or removed since the listing: left out
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !os.SameFile(fi, st) {
		return nil
	}
	hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, st.Size(), int64(st.Mode().Perm()&0o755)
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, st.Size()); err != nil {
		return fmt.Errorf("%q changed while being written to the tar: %w", rel, err)
	}
	return nil
}
