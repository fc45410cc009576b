package layer

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Kind is what an entry of a layer does.
type Kind byte

// The kinds of entries. A layer holds nothing else.
const (
	KindDir      Kind = 'd' // a folder, new or with a changed mode
	KindFile     Kind = 'f' // a regular file; its bytes are read from the Reader
	KindSymlink  Kind = 'l' // a symlink to Linkname
	KindHardLink Kind = 'h' // a file of the same bytes as Linkname, an earlier entry
	KindWhiteout Kind = 'w' // Name is deleted, with what it held
	KindOpaque   Kind = 'o' // folder Name's earlier content is gone ("" the root)
)

// Entry is one entry of a layer, its name checked (CheckName; an opaque
// marker's folder may be "", the root).
type Entry struct {
	Kind Kind
	// Name is the path the entry is about: for a whiteout the deleted
	// entry, for an opaque marker its folder.
	Name string
	// Linkname is a symlink's target (checked for length and NUL only:
	// where it points is no concern of a layer) or a hard link's earlier
	// entry (a checked name).
	Linkname string
	// Mode holds the permission bits only: set-id and sticky bits never
	// come through a layer.
	Mode    fs.FileMode
	ModTime time.Time
	// Size is what the header says of a file; the bytes read are what
	// count.
	Size int64
	// Index is the entry's place in the layer, from 1, for messages.
	Index int
	// Raw is the name as written, for messages.
	Raw string
}

// Reader reads a layer entry by entry. Every error about the layer
// itself matches ErrMalformed; it says which entry and why.
type Reader struct {
	tr *tar.Reader
	n  int
}

// NewReader reads the layer r.
func NewReader(r io.Reader) *Reader { return &Reader{tr: tar.NewReader(r)} }

// Read reads the bytes of the current entry if it is a file.
func (r *Reader) Read(p []byte) (int, error) { return r.tr.Read(p) }

// Next returns the next entry, io.EOF after the last. The root's own
// folder entry and tar's global headers are passed over.
func (r *Reader) Next() (*Entry, error) {
	for {
		r.n++
		h, err := r.tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, &Error{Entry: r.n, Reason: fmt.Sprintf("reading it: %v", err), Err: err}
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name := trimName(h.Name)
		if name == "" {
			if h.Typeflag != tar.TypeDir {
				return nil, r.bad(h, "only a folder may name the root itself")
			}
			continue
		}
		return r.entry(h, name)
	}
}

func (r *Reader) entry(h *tar.Header, name string) (*Entry, error) {
	e := &Entry{Name: name, Mode: fs.FileMode(h.Mode & 0o777), ModTime: h.ModTime, Size: h.Size, Index: r.n, Raw: h.Name} //nolint:gosec // masked to the permission bits first
	if strings.HasPrefix(name, "/") {
		return nil, r.bad(h, "an absolute name: a layer's names are relative to its root")
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir != "" {
		if err := CheckName(dir); err != nil {
			return nil, r.badErr(h, err)
		}
	}
	switch {
	case base == WhiteoutOpaque:
		e.Kind, e.Name = KindOpaque, dir
		return e, nil
	case strings.HasPrefix(base, WhiteoutPrefix):
		// Joined as written, not cleaned: "a/b/.wh..." names no entry (a
		// cleaning join would make it "a").
		e.Kind, e.Name = KindWhiteout, strings.TrimPrefix(base, WhiteoutPrefix)
		if dir != "" {
			e.Name = dir + "/" + e.Name
		}
		if err := CheckName(e.Name); err != nil {
			return nil, r.bad(h, "a whiteout of no valid name")
		}
		return e, nil
	}
	if err := CheckName(name); err != nil {
		return nil, r.badErr(h, err)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		e.Kind = KindDir
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archivers still write TypeRegA
		e.Kind = KindFile
	case tar.TypeSymlink:
		if err := checkTarget(h.Linkname); err != nil {
			return nil, r.badErr(h, err)
		}
		e.Kind, e.Linkname = KindSymlink, h.Linkname
	case tar.TypeLink:
		e.Kind, e.Linkname = KindHardLink, trimName(h.Linkname)
		if CheckName(e.Linkname) != nil {
			return nil, r.bad(h, fmt.Sprintf("a hard link to %q, which no entry of a layer can be", shorten(h.Linkname)))
		}
	default:
		return nil, r.bad(h, fmt.Sprintf("type %q is not a file, folder, symlink or whiteout: a layer holds only those", h.Typeflag))
	}
	return e, nil
}

func (r *Reader) bad(h *tar.Header, reason string) error {
	return &Error{Entry: r.n, Name: h.Name, Reason: reason}
}

func (r *Reader) badErr(h *tar.Header, err error) error {
	return &Error{Entry: r.n, Name: h.Name, Reason: err.Error(), Err: err}
}
