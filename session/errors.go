package session

import (
	"errors"
	"fmt"

	"github.com/sandboxrun/sandboxrun/internal/limit"
	"github.com/sandboxrun/sandboxrun/internal/size"
)

// Sentinel errors callers branch on with errors.Is. The HTTP server maps
// them to statuses (404, 400, 413, 409, 404).
var (
	// ErrNotFound: no such session, expired, deleted, or owned by someone
	// else. The last case is deliberately indistinguishable so a token cannot
	// probe for other tokens' sessions.
	ErrNotFound = errors.New("session not found")
	// ErrBadPath is wrapped by *PathError.
	ErrBadPath = errors.New("bad path")
	// ErrLimit is matched by *LimitError.
	ErrLimit = errors.New("limit reached")
	// ErrNotFile: the operation needs a regular file and the path names a
	// folder, a symlink or something else (the message says what).
	ErrNotFile = errors.New("not a regular file")
	// ErrFileNotFound: nothing at that path in the workspace.
	ErrFileNotFound = errors.New("file not found")
	// ErrBadTTL: a requested TTL is negative.
	ErrBadTTL = errors.New("bad ttl")
	// ErrSnapshotNotFound: no such snapshot of the session (or the
	// session is another owner's).
	ErrSnapshotNotFound = errors.New("snapshot not found")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("session store closed")
)

// PathError says why a path given by a caller (or found in a tar) was
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

func badPath(p, format string, args ...any) *PathError {
	return &PathError{Path: p, Reason: fmt.Sprintf(format, args...)}
}

// LimitError reports a bound that was reached: which one (Limit, its
// operator policy key, e.g. "sessions.quota"), its value (Value: bytes,
// count, depth or nanoseconds), and how to raise it (Hint). Its fields and
// message are the skill store's too (internal/limit); it is a type of its
// own so that a caller tells a session's limit from an upload's.
type LimitError limit.Error

// Error says which limit, its value and the hint.
func (e *LimitError) Error() string { return (*limit.Error)(e).Error() }

// Is makes every *LimitError match ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// Policy keys of the limits, as the operator policy spells them.
const (
	LimitQuota      = "sessions.quota"
	LimitTotalBytes = "sessions.max_total_bytes"
	LimitPerOwner   = "sessions.max_per_token"
	LimitMaxFiles   = "sessions.max_files"
	LimitMaxDepth   = "sessions.max_depth"
	LimitMaxTTL     = "sessions.max_ttl"
	LimitSnapshots  = "sessions.max_snapshots"
)

func quotaError(q int64) *LimitError {
	return &LimitError{Limit: LimitQuota, Value: q,
		Hint: fmt.Sprintf("the session's files may take %s: delete files from the session, or raise sessions.quota in the operator policy", size.Format(q))}
}

func totalError(t int64) *LimitError {
	return &LimitError{Limit: LimitTotalBytes, Value: t,
		Hint: fmt.Sprintf("all sessions together may take %s: delete sessions or files, or raise sessions.max_total_bytes in the operator policy", size.Format(t))}
}
