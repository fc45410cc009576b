package layer

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// The OCI layer's whiteout names.
const (
	// WhiteoutPrefix, put before an entry's name in its folder, says the
	// entry is deleted.
	WhiteoutPrefix = ".wh."
	// WhiteoutOpaque in a folder says that everything the folder held
	// before the layer is gone.
	WhiteoutOpaque = WhiteoutPrefix + WhiteoutPrefix + ".opq"
)

// Linux's bounds on names, which a layer's names keep to.
const (
	// MaxNameBytes is NAME_MAX: one element of a path.
	MaxNameBytes = 255
	// MaxPathBytes is PATH_MAX: a whole path, and a symlink's target.
	MaxPathBytes = 4096
)

// ErrMalformed is wrapped by every error of Reader about the layer itself
// (its tar framing, a name, a type), as opposed to the reader under it.
var ErrMalformed = errors.New("malformed layer")

// errWhiteoutName says why a name that holds a whiteout element cannot be
// an entry's.
var errWhiteoutName = errors.New("an element begins with " + WhiteoutPrefix + ", which marks a deletion in a layer")

// Error is a malformed entry: its place in the layer (1-based), its name
// as written, and what is wrong. It matches ErrMalformed.
type Error struct {
	Entry  int
	Name   string
	Reason string
	Err    error // what Reason came from, if anything
}

// Error names the entry and the reason.
func (e *Error) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("entry %d: %s", e.Entry, e.Reason)
	}
	return fmt.Sprintf("entry %d (%q): %s", e.Entry, shorten(e.Name), e.Reason)
}

// Unwrap reports ErrMalformed and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrMalformed}
	}
	return []error{ErrMalformed, e.Err}
}

// CheckName reports whether name may name an entry of a layer: a clean,
// relative, slash-separated path of real file names (no empty, "." or
// ".." element, no NUL, no element over MaxNameBytes, at most MaxPathBytes
// in all), none of them beginning with WhiteoutPrefix. Such a name stays
// inside the root when taken one element at a time. It is loose on
// purpose otherwise: a run may name its files as Linux allows (a
// backslash, a newline, "%2e"), and refusing one loses all its changes.
func CheckName(name string) error {
	if name == "" || len(name) > MaxPathBytes || strings.IndexByte(name, 0) >= 0 || strings.HasPrefix(name, "/") {
		return fmt.Errorf("not a relative path of 1 to %d bytes without NUL", MaxPathBytes)
	}
	for e := range strings.SplitSeq(name, "/") {
		if e == "" || e == "." || e == ".." || len(e) > MaxNameBytes {
			return fmt.Errorf("an element is empty, \".\", \"..\" or over %d bytes", MaxNameBytes)
		}
		if strings.HasPrefix(e, WhiteoutPrefix) {
			return errWhiteoutName
		}
	}
	return nil
}

// Carries reports whether a layer can carry an entry of that name: a
// valid name, no element of which begins with WhiteoutPrefix. Writer
// leaves out the others.
func Carries(name string) bool { return CheckName(name) == nil }

// checkTarget checks a symlink's target: 1 to MaxPathBytes bytes without
// NUL, as Linux takes it. Where it points is the reader's business: the
// applier makes links, it never follows them.
func checkTarget(t string) error {
	if t == "" || len(t) > MaxPathBytes || strings.IndexByte(t, 0) >= 0 {
		return fmt.Errorf("a symlink's target must be 1 to %d bytes without NUL", MaxPathBytes)
	}
	return nil
}

// whiteoutName is the entry name that says name is deleted.
func whiteoutName(name string) string {
	dir, base := path.Split(name)
	return dir + WhiteoutPrefix + base
}

// opaqueName is the entry name that says dir's earlier content is gone
// ("" the root).
func opaqueName(dir string) string {
	if dir == "" {
		return WhiteoutOpaque
	}
	return dir + "/" + WhiteoutOpaque
}

// trimName turns a tar name into the path it stands for: without a
// leading "./" or a trailing "/" ("" the root).
func trimName(name string) string {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/")
	if name == "." {
		return ""
	}
	return name
}

func shorten(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}
