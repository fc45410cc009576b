package fsroot

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TempPrefix starts the names the store gives its own temporary files and
// folders inside a workspace (uploads being written, tars being staged).
// Such names are never listed nor put in a tar, are removed at Open, and
// are refused as caller paths, so a caller can neither read a half upload
// nor plant a file that Open would delete.
const TempPrefix = ".sandboxrun-upload-"

// MaxPathBytes bounds a caller's path, as Linux's PATH_MAX does.
const MaxPathBytes = 4096

// maxNameBytes is Linux's NAME_MAX: refusing longer elements here gives a
// clear message instead of ENAMETOOLONG from the kernel.
const maxNameBytes = 255

// CheckPath is the guard every caller path goes through: it returns p if p
// is a relative, clean, valid UTF-8 slash path of at most MaxPathBytes and
// maxDepth elements (maxDepth <= 0 means DefaultMaxDepth). It refuses the
// empty path, absolute paths, "." / ".." / empty elements, control bytes
// (NUL included), backslashes, percent-encoded forms of '.', '/', '\', '%'
// and control bytes (a consumer that decodes once more must not find a
// traversal), and the reserved TempPrefix. The file system is not consulted:
// symlinks are the business of the operations, which never follow them.
// Errors are *PathError (matching ErrBadPath).
func CheckPath(p string, maxDepth int) (string, error) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	switch {
	case p == "":
		return "", BadPath(p, "the path is empty: name a file relative to the workspace, e.g. data/input.csv")
	case len(p) > MaxPathBytes:
		return "", BadPath(Shorten(p), "the path is %d bytes, more than %d: use a shorter path", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return "", BadPath(p, "the path is not valid UTF-8 (overlong or broken byte sequences are refused): name it in UTF-8")
	case strings.ContainsFunc(p, unicode.IsControl):
		return "", BadPath(p, "the path holds a control character (NUL, newline, ...): remove it")
	case strings.ContainsRune(p, '\\'):
		return "", BadPath(p, "the path holds a backslash: separate folders with /")
	case strings.HasPrefix(p, "/"):
		return "", BadPath(p, "the path is absolute: name it relative to the workspace, without a leading /")
	}
	if enc, ok := encodedSpecial(p); ok {
		return "", BadPath(p, "the path holds %q, a percent-encoded %s: send the path decoded, once", enc, describeByte(unhex(enc[1])<<4|unhex(enc[2])))
	}
	elems := strings.Split(p, "/")
	for _, e := range elems {
		switch {
		case e == "":
			return "", BadPath(p, "the path has an empty element (a double, leading or trailing /): write it clean, e.g. %q", path.Clean("/" + p)[1:])
		case e == ".":
			return "", BadPath(p, "the path has a \".\" element: write it clean, e.g. %q", strings.TrimPrefix(path.Clean(p), "./"))
		case e == "..":
			return "", BadPath(p, "the path has a \"..\" element: name a file inside the workspace")
		case strings.HasPrefix(e, TempPrefix):
			return "", BadPath(p, "names starting %q are reserved for the store's temporary files: rename it", TempPrefix)
		case len(e) > maxNameBytes:
			return "", BadPath(p, "the element %q is %d bytes, more than %d: use a shorter name", Shorten(e), len(e), maxNameBytes)
		}
	}
	if len(elems) > maxDepth {
		le := &LimitError{Limit: LimitMaxDepth, Value: int64(maxDepth),
			Hint: "use a shallower path, or raise sessions.max_depth in the operator policy"}
		return "", &PathError{Path: p, Reason: fmt.Sprintf("the path is %d folders deep, more than %d: use a shallower path, or raise sessions.max_depth in the operator policy", len(elems), maxDepth), limit: le}
	}
	if path.Clean(p) != p { // belt and braces: the checks above imply it
		return "", BadPath(p, "the path is not clean: write it as %q", path.Clean(p))
	}
	return p, nil
}

// encodedSpecial finds a '%' followed by two hex digits that decode to a
// byte that would change the path's meaning if some layer decoded it again.
func encodedSpecial(p string) (string, bool) {
	for i := 0; i+2 < len(p); i++ {
		if p[i] != '%' || !isHex(p[i+1]) || !isHex(p[i+2]) {
			continue
		}
		b := unhex(p[i+1])<<4 | unhex(p[i+2])
		if b == '.' || b == '/' || b == '\\' || b == '%' || b < 0x20 || b == 0x7f {
			return p[i : i+3], true
		}
	}
	return "", false
}

func describeByte(b byte) string {
	switch b {
	case '.':
		return "'.'"
	case '/':
		return "'/'"
	case '\\':
		return "backslash"
	case '%':
		return "'%' (double encoding)"
	default:
		return "control byte"
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

// Shorten keeps error messages readable for huge inputs: a name or path
// past 64 bytes is cut there.
func Shorten(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}

// IsTemp reports whether a directory entry is one of the store's temporary
// names (hidden from every listing).
func IsTemp(name string) bool { return strings.HasPrefix(name, TempPrefix) }
