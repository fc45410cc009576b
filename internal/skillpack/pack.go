package skillpack

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/fsmode"
	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// PageSize is the unit a tmpfs charges a file in.
const PageSize = 4096

// Errors of Pack; each comes wrapped with the skill, the entry and the fix.
var (
	// ErrTooLarge: the skill takes more than the cap in the sandbox.
	ErrTooLarge = errors.New("skill too large to send")
	// ErrUnsafe: the folder holds a link leaving it, or something that is
	// not a file, folder or link.
	ErrUnsafe = errors.New("skill folder cannot be sent")
)

// Archive is a packed skill folder.
type Archive struct {
	// Digest names the content by skillstore's rule (skillstore.Digest).
	Digest string
	// Tar is the archive: folders, files and links, read-only.
	Tar []byte
	// Size is what the skill takes in the sandbox (package documentation).
	Size int64
}

// Limit says what Pack may take and how a refusal names the setting that
// raises it.
type Limit struct {
	// Max is the largest Size packed.
	Max int64
	// Key is the setting that sets Max, named in ErrTooLarge's message.
	Key string
}

// Pack reads the folder dir of skill name into an archive.
func Pack(name, dir string, lim Limit) (*Archive, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", name, err)
	}
	root, err := os.OpenRoot(realDir)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", name, err)
	}
	defer func() { _ = root.Close() }()
	p := packer{name: name, dir: realDir, root: root, lim: lim}
	p.tw = tar.NewWriter(&p.buf)
	if err := filepath.WalkDir(realDir, p.add); err != nil {
		return nil, err
	}
	if p.size > lim.Max {
		return nil, fmt.Errorf("%w: skill %s takes %s in the sandbox (files counted in whole %d-byte pages, a page per folder and link), over %s %s: raise %s, or put the skill under a volume claim (kubernetes.claims)",
			ErrTooLarge, name, size.Format(p.size), PageSize, lim.Key, size.Format(lim.Max), lim.Key)
	}
	if err := p.tw.Close(); err != nil {
		return nil, fmt.Errorf("skill %s: %w", name, err)
	}
	return &Archive{Digest: p.list.Digest(), Tar: p.buf.Bytes(), Size: p.size}, nil
}

type packer struct {
	name string
	dir  string
	root *os.Root
	lim  Limit
	buf  bytes.Buffer
	tw   *tar.Writer
	list skillstore.Listing
	size int64
}

var epoch = time.Unix(0, 0)

func (p *packer) add(full string, d fs.DirEntry, err error) error {
	if err != nil {
		return fmt.Errorf("skill %s: %w", p.name, err)
	}
	if full == p.dir {
		return nil
	}
	rel, err := filepath.Rel(p.dir, full)
	if err != nil {
		return err
	}
	rel = filepath.ToSlash(rel)
	h := &tar.Header{Name: rel, ModTime: epoch, Format: tar.FormatPAX}
	switch t := d.Type(); {
	case t.IsDir():
		if !p.charge(PageSize) {
			return nil
		}
		h.Typeflag, h.Name, h.Mode = tar.TypeDir, rel+"/", 0o555
		p.list.Dir(rel)
		return p.tw.WriteHeader(h)
	case t&fs.ModeSymlink != 0:
		target, err := p.checkLink(rel, full)
		if err != nil {
			return err
		}
		if !p.charge(PageSize) {
			return nil
		}
		h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, target, 0o777
		p.list.Link(rel, target)
		return p.tw.WriteHeader(h)
	case t.IsRegular():
		return p.addFile(rel, h)
	default:
		return fmt.Errorf("%w: skill %s: %s is %s: a skill holds only files, folders and links; remove it",
			ErrUnsafe, p.name, rel, fsmode.Describe(t))
	}
}

// checkLink returns the target of the link at rel when it stays inside
// the folder both as written and as this host resolves it.
func (p *packer) checkLink(rel, full string) (string, error) {
	target, err := p.root.Readlink(rel)
	if err != nil {
		return "", fmt.Errorf("skill %s: %w", p.name, err)
	}
	refuse := func(why string) error {
		return fmt.Errorf("%w: skill %s: link %s -> %s %s: a sent skill may link only inside its folder; make it a relative link to a file in the skill, or copy the file in",
			ErrUnsafe, p.name, rel, target, why)
	}
	if path.IsAbs(target) {
		return "", refuse("is absolute")
	}
	if j := path.Join(path.Dir(rel), target); j == ".." || strings.HasPrefix(j, "../") {
		return "", refuse("climbs out of the folder")
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", refuse("does not resolve (" + errors.Unwrap(err).Error() + ")")
	}
	if r, err := filepath.Rel(p.dir, real); err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", refuse("resolves outside the folder")
	}
	return target, nil
}

func (p *packer) addFile(rel string, h *tar.Header) error {
	f, err := p.root.Open(rel)
	if err != nil {
		return fmt.Errorf("skill %s: %w", p.name, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("skill %s: %w", p.name, err)
	}
	if !fi.Mode().IsRegular() { // replaced since the walk saw it
		return fmt.Errorf("%w: skill %s: %s is %s now: a skill holds only files, folders and links", ErrUnsafe, p.name, rel, fsmode.Describe(fi.Mode()))
	}
	if !p.charge(pages(fi.Size())) {
		return nil
	}
	// Read at most what was charged: a file growing meanwhile is cut
	// off, never read without bound.
	body, err := io.ReadAll(io.LimitReader(f, fi.Size()))
	if err != nil {
		return fmt.Errorf("skill %s: read %s: %w", p.name, rel, err)
	}
	h.Typeflag, h.Size, h.Mode = tar.TypeReg, int64(len(body)), 0o444
	if fi.Mode().Perm()&0o111 != 0 {
		h.Mode = 0o555
	}
	sum := sha256.Sum256(body)
	p.list.File(rel, fs.FileMode(h.Mode), sum[:]) //nolint:gosec // h.Mode is 0o444 or 0o555
	if err := p.tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = p.tw.Write(body)
	return err
}

// charge counts n bytes against the cap and says whether the entry is
// packed: past the cap the walk goes on only to tell the skill's size.
func (p *packer) charge(n int64) bool {
	p.size += n
	return p.size <= p.lim.Max
}

// pages is n rounded up to whole pages; an empty file takes none.
func pages(n int64) int64 { return (n + PageSize - 1) / PageSize * PageSize }
