package skillstore

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/fsroot"
)

// Format is an upload's archive format.
type Format string

// The archive formats an upload may take, by media type.
const (
	FormatTar Format = "application/x-tar"
	FormatZip Format = "application/zip"
)

// maxLinkTarget bounds a zip symlink's target, read from its content.
const maxLinkTarget = 4096

// member is one archive entry: the guard's view, and its bytes.
type member struct {
	entry fsroot.ArchiveEntry
	open  func() (io.ReadCloser, error) // files only
}

// unpacked is an archive written out under a staging folder.
type unpacked struct {
	dir   string // the skill folder: the staging folder, or its one top folder
	files int    // files, folders and links
	bytes int64  // the files' bytes
}

// unpack reads an archive of the given format from r into dst, an empty
// folder, with every member through fsroot.CheckEntry, the files' bytes
// counted as they are read, then finds the skill folder in it. spool is a
// file path a zip is written to first (zip needs random access).
func unpack(dst, spool string, format Format, r io.Reader, lim Limits) (unpacked, error) {
	raw := &capped{r: r, left: lim.MaxUploadBytes, lim: lim}
	var walk func(func(member) error) error
	switch format {
	case FormatTar:
		walk = tarMembers(raw)
	case FormatZip:
		w, err := zipMembers(raw, spool)
		if err != nil {
			return unpacked{}, err
		}
		walk = w
	default:
		return unpacked{}, fmt.Errorf("%w: %q is not an archive format: send %s or %s", ErrBadArchive, format, FormatTar, FormatZip)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return unpacked{}, fmt.Errorf("staging the upload: %w", err)
	}
	defer func() { _ = root.Close() }()
	w := &writer{root: root, lim: lim, tree: fsroot.Tree{}, budget: lim.MaxUploadBytes}
	i := 0
	err = walk(func(m member) error {
		i++
		return w.add(i, m)
	})
	if err != nil {
		return unpacked{}, err
	}
	dir, err := w.skillDir(dst)
	if err != nil {
		return unpacked{}, err
	}
	return unpacked{dir: dir, files: len(w.tree), bytes: lim.MaxUploadBytes - w.budget}, nil
}

// writer places checked members in the staging folder.
type writer struct {
	root   *os.Root
	lim    Limits
	tree   fsroot.Tree
	links  map[string]string // path -> target
	budget int64             // unpacked bytes left
}

func (w *writer) add(i int, m member) error {
	clean, skip, err := fsroot.CheckEntry(i, m.entry, w.lim.MaxDepth, true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	if skip {
		return nil
	}
	dir := m.entry.Kind == fsroot.EntryDir
	if k, ok := w.tree[clean]; ok && (!dir || k != 'd') {
		return fmt.Errorf("%w: entry %d (%q): the path appears twice in the archive: keep one", ErrBadArchive, i, clean)
	}
	if err := w.tree.Record(clean, dir); err != nil {
		return fmt.Errorf("%w: entry %d: %w", ErrBadArchive, i, err)
	}
	if len(w.tree) > w.lim.MaxFiles {
		return &LimitError{Limit: LimitFiles, Value: int64(w.lim.MaxFiles),
			Hint: "the skill has more files, folders and links than an upload may hold: trim it, or ask the operator to raise skill_uploads.max_files"}
	}
	if parent := path.Dir(clean); parent != "." {
		if err := w.root.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("staging %q: %w", clean, err)
		}
	}
	switch m.entry.Kind {
	case fsroot.EntryDir:
		err = w.root.MkdirAll(clean, 0o755)
	case fsroot.EntrySymlink:
		if w.links == nil {
			w.links = map[string]string{}
		}
		w.links[clean] = m.entry.Linkname
		err = w.root.Symlink(m.entry.Linkname, clean)
	default:
		err = w.file(clean, m)
	}
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) || errors.Is(err, ErrBadArchive) {
			return err
		}
		return fmt.Errorf("staging %q: %w", clean, err)
	}
	return nil
}

// file copies one file's bytes, counting them against the budget whatever
// the header claims, and makes it durable.
func (w *writer) file(clean string, m member) error {
	mode := fileMode(m.entry.Mode)
	f, err := w.root.OpenFile(clean, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	src, err := m.open()
	if err != nil {
		return fmt.Errorf("%w: reading %q: %w", ErrBadArchive, clean, err)
	}
	defer func() { _ = src.Close() }()
	n, err := io.Copy(f, io.LimitReader(src, w.budget+1))
	w.budget -= n
	switch {
	case w.budget < 0:
		return uploadTooLarge(w.lim)
	case err != nil && !errors.As(err, new(*LimitError)) && !isWriteError(err):
		return fmt.Errorf("%w: reading %q: %w", ErrBadArchive, clean, err)
	case err != nil:
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return f.Sync()
}

// isWriteError reports an error of the file system (a full disk), not of
// the archive.
func isWriteError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}

// fileMode is the mode a file is stored with: 0755 when the archive marks
// it executable for anyone, else 0644.
func fileMode(mode int64) os.FileMode {
	if mode&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// skillDir finds the skill folder: dst when SKILL.md is at the archive's
// root, else its one top folder holding SKILL.md. Links are judged again
// from that folder, since stripping a top folder moves the root down.
func (w *writer) skillDir(dst string) (string, error) {
	if hasSkillFile(w.tree, "") {
		return dst, nil
	}
	var tops []string
	for p := range w.tree {
		if !strings.Contains(p, "/") {
			tops = append(tops, p)
		}
	}
	if len(tops) != 1 || w.tree[tops[0]] != 'd' || !hasSkillFile(w.tree, tops[0]+"/") {
		return "", fmt.Errorf("%w: no SKILL.md at the archive's root nor in one top folder: put the skill's SKILL.md at the root, or the whole skill folder alone in the archive", ErrBadArchive)
	}
	for p, target := range w.links {
		if reason := fsroot.LinkLeaves(strings.TrimPrefix(p, tops[0]+"/"), target); reason != "" {
			return "", fmt.Errorf("%w: the link %q to %q %s: links may only point inside the skill folder", ErrBadArchive, p, target, reason)
		}
	}
	return filepath.Join(dst, tops[0]), nil
}

func hasSkillFile(t fsroot.Tree, prefix string) bool {
	return t[prefix+"SKILL.md"] != 0 || t[prefix+"skill.md"] != 0
}

func uploadTooLarge(lim Limits) error {
	return &LimitError{Limit: LimitUploadBytes, Value: lim.MaxUploadBytes,
		Hint: "the upload (or what it unpacks to) is larger than the operator allows: trim the skill, or ask the operator to raise skill_uploads.max_upload_bytes"}
}

// capped reads at most left bytes, then fails with the upload limit.
type capped struct {
	r    io.Reader
	left int64
	lim  Limits
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, uploadTooLarge(c.lim)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, uploadTooLarge(c.lim)
	}
	return n, err
}

func tarMembers(r io.Reader) func(func(member) error) error {
	return func(yield func(member) error) error {
		tr := tar.NewReader(r)
		for i := 1; ; i++ {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				if errors.As(err, new(*LimitError)) {
					return err
				}
				return fmt.Errorf("%w: reading entry %d: %w: send a tar archive (ustar, pax or gnu)", ErrBadArchive, i, err)
			}
			if err := yield(member{entry: fsroot.TarEntry(hdr), open: func() (io.ReadCloser, error) { return io.NopCloser(tr), nil }}); err != nil {
				return err
			}
		}
	}
}
