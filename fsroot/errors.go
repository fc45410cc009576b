package fsroot

import (
	"errors"
	"fmt"

	"github.com/sandboxrun/sandboxrun/internal/limit"
)

// Sentinel errors callers branch on with errors.Is; the session store
// re-exports them, so a caller of either package matches the same value.
var (
	// ErrBadPath is wrapped by *PathError.
	ErrBadPath = errors.New("bad path")
	// ErrLimit is matched by *LimitError.
	ErrLimit = errors.New("limit reached")
	// ErrFileNotFound: nothing at that path under the root.
	ErrFileNotFound = errors.New("file not found")
)

// PathError says why a path given by a caller (or found in an archive) was
// refused and how to fix it. It matches ErrBadPath, and also ErrLimit (and
// *LimitError) when the path is refused for its depth.
type PathError struct {
	// Path is the offending path as given (quoted in Error).
	Path string
	// Reason says what is wrong and what to do instead.
	Reason string
	// limit is set when the refusal is a limit (depth), so that callers
	// classifying by ErrLimit see it too.
	limit *LimitError
}

// Error names the path, the reason and the fix.
func (e *PathError) Error() string {
	return fmt.Sprintf("bad path %q: %s", e.Path, e.Reason)
}

// Unwrap reports ErrBadPath, plus the *LimitError for a depth refusal.
func (e *PathError) Unwrap() []error {
	if e.limit != nil {
		return []error{ErrBadPath, e.limit}
	}
	return []error{ErrBadPath}
}

// BadPath is a refusal of path p, the reason formatted as by fmt.Sprintf.
func BadPath(p, format string, args ...any) *PathError {
	return &PathError{Path: p, Reason: fmt.Sprintf(format, args...)}
}

// LimitError reports a bound that was reached in a workspace's files:
// which one (Limit, its operator policy key, e.g. "sessions.quota"), its
// value (Value: bytes, count, depth or nanoseconds), and how to raise it
// (Hint). Its fields and message are the skill store's too
// (internal/limit); it is a type of its own so that a caller tells a
// session's limit from an upload's. The session store's LimitError is this
// type.
type LimitError limit.Error

// Error says which limit, its value and the hint.
func (e *LimitError) Error() string { return (*limit.Error)(e).Error() }

// Is makes every *LimitError match ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// LimitMaxDepth is the policy key of the depth bound CheckPath enforces.
const LimitMaxDepth = "sessions.max_depth"

// DefaultMaxDepth is the depth CheckPath allows when given none.
const DefaultMaxDepth = 32
