package fsroot

import (
	"archive/tar"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// EntryKind is what an archive member is, whatever the archive format.
type EntryKind int

// Kinds of archive members. Only files and folders land in a workspace;
// a skill upload also takes symbolic links that stay inside it.
const (
	EntryOther EntryKind = iota // a device, a fifo, a socket...
	EntryFile
	EntryDir
	EntrySymlink
	EntryHardlink
	EntrySkip // archive metadata (a pax global header): not a member
)

// ArchiveEntry is one member of an uploaded archive (tar or zip) as the
// upload guards judge it.
type ArchiveEntry struct {
	Name string
	Kind EntryKind
	// Mode holds the permission and set-id bits, as in a tar header.
	Mode int64
	// Linkname is a link's target.
	Linkname string
	// Type describes an EntryOther for its refusal (the tar type flag, the
	// zip mode).
	Type string
}

// TarEntry reads the guard's view of a tar header.
func TarEntry(hdr *tar.Header) ArchiveEntry {
	e := ArchiveEntry{Name: hdr.Name, Mode: hdr.Mode, Linkname: hdr.Linkname}
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		e.Kind = EntrySkip // archive-wide metadata (git archive writes one)
	case tar.TypeReg:
		e.Kind = EntryFile
	case tar.TypeDir:
		e.Kind = EntryDir
	case tar.TypeSymlink:
		e.Kind = EntrySymlink
	case tar.TypeLink:
		e.Kind = EntryHardlink
	default:
		e.Kind, e.Type = EntryOther, fmt.Sprintf("type %q", hdr.Typeflag)
	}
	return e
}

// EntryError says which archive member was refused and why. It unwraps to
// the path or limit error behind it, when there is one.
type EntryError struct {
	Index  int // 1-based
	Name   string
	Reason string
	Err    error
}

// Error names the entry and the reason.
func (e *EntryError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("entry %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("entry %d (%q): %s", e.Index, Shorten(e.Name), e.Reason)
}

// Unwrap returns the error behind the refusal, if any.
func (e *EntryError) Unwrap() error { return e.Err }

// CheckEntry is the guard every uploaded archive member goes through, for
// a session's tar and a skill's tar or zip alike. It returns the member's
// clean relative path, or skip for what is not to be stored (metadata, the
// archive's own top folder "." or "./"). It refuses devices, fifos and
// other special members, set-uid, set-gid and sticky bits, names CheckPath
// refuses (absolute, "..", control bytes, deeper than maxDepth), and links:
// hard links always; symbolic links unless allowSymlinks and the target,
// read from the link's folder, stays inside the archive (relative, never
// above its root). One leading "./" is accepted (tar -C dir . writes it).
func CheckEntry(i int, e ArchiveEntry, maxDepth int, allowSymlinks bool) (clean string, skip bool, err error) {
	refuse := func(format string, args ...any) (string, bool, error) {
		return "", false, &EntryError{Index: i, Name: e.Name, Reason: fmt.Sprintf(format, args...)}
	}
	switch e.Kind {
	case EntrySkip:
		return "", true, nil
	case EntryFile, EntryDir:
	case EntrySymlink:
		if !allowSymlinks {
			return refuse("links are refused (a link could reach outside the workspace): upload the file itself")
		}
	case EntryHardlink:
		return refuse("hard links are refused: upload the file itself")
	default:
		return refuse("%s is not a regular file or a folder: only those are accepted", e.Type)
	}
	if e.Mode&setIDBits != 0 {
		return refuse("mode %#o has set-uid, set-gid or sticky bits: clear them", e.Mode)
	}
	name := e.Name
	if e.Kind == EntryDir {
		name = strings.TrimSuffix(name, "/")
	}
	name = strings.TrimPrefix(name, "./")
	if e.Kind == EntryDir && (name == "" || name == ".") {
		return "", true, nil
	}
	clean, err = CheckPath(name, maxDepth)
	if err != nil {
		return "", false, &EntryError{Index: i, Name: e.Name, Err: err}
	}
	if e.Kind == EntrySymlink {
		if reason := LinkLeaves(clean, e.Linkname); reason != "" {
			return refuse("the link to %q %s: links may only point inside the upload, by a relative path", Shorten(e.Linkname), reason)
		}
	}
	return clean, false, nil
}

// LinkLeaves says why a symbolic link at clean (a path CheckPath
// accepted) with target could reach outside the folder it is in, or ""
// when it cannot. A lexical test alone is unsound ("a/../.." where a is
// itself a link), so the target must be clean, relative, with ".." only
// as its leading elements and no more of them than the link has folders
// above it: its walk goes up through real folders (an archive never puts
// a member under a link), then down, and a link met going down is itself
// inside by the same rule.
func LinkLeaves(clean, target string) string {
	switch {
	case target == "":
		return "is empty"
	case strings.HasPrefix(target, "/"):
		return "is absolute"
	case strings.ContainsRune(target, 0), strings.ContainsRune(target, '\\'):
		return "holds a NUL or a backslash"
	case path.Clean(target) != target:
		return "is not clean (write it as " + strconv.Quote(path.Clean(target)) + ")"
	}
	up := 0
	elems := strings.Split(target, "/")
	for up < len(elems) && elems[up] == ".." {
		up++
	}
	if slices.Contains(elems[up:], "..") {
		return "has a \"..\" after a name"
	}
	if up > strings.Count(clean, "/") {
		return "leaves the upload"
	}
	return ""
}

// setIDBits are the mode bits refused in uploads: set-uid, set-gid,
// sticky.
const setIDBits = 0o7000

// Tree is the paths of an archive, each 'f' (a file, or a link) or 'd' (a
// folder, named or implied by a deeper path).
type Tree map[string]byte

// Record notes one member and the folders it implies; a path that would
// be a file and a folder is refused.
func (t Tree) Record(clean string, dir bool) error {
	elems := strings.Split(clean, "/")
	for i := 1; i < len(elems); i++ {
		parent := strings.Join(elems[:i], "/")
		if t[parent] == 'f' {
			return fmt.Errorf("%q is a file earlier in the archive and a folder here: keep one", parent)
		}
		t[parent] = 'd'
	}
	want := byte('f')
	if dir {
		want = 'd'
	}
	if k, ok := t[clean]; ok && k != want {
		return fmt.Errorf("%q is both a file and a folder in the archive: keep one", clean)
	}
	t[clean] = want
	return nil
}
