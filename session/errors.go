package session

import (
	"errors"
	"fmt"

	"github.com/sandboxrun/sandboxrun/fsroot"
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
	ErrBadPath = fsroot.ErrBadPath
	// ErrLimit is matched by *LimitError.
	ErrLimit = fsroot.ErrLimit
	// ErrNotFile: the operation needs a regular file and the path names a
	// folder, a symlink or something else (the message says what).
	ErrNotFile = errors.New("not a regular file")
	// ErrFileNotFound: nothing at that path in the workspace.
	ErrFileNotFound = fsroot.ErrFileNotFound
	// ErrBadTTL: a requested TTL is negative.
	ErrBadTTL = errors.New("bad ttl")
	// ErrSnapshotNotFound: no such snapshot of the session (or the
	// session is another owner's).
	ErrSnapshotNotFound = errors.New("snapshot not found")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("session store closed")
)

// PathError says why a path was refused (fsroot.PathError).
type PathError = fsroot.PathError

// LimitError reports a bound that was reached (fsroot.LimitError, whose
// depth refusals CheckPath makes; the store's other limits are its too).
type LimitError = fsroot.LimitError

func badPath(p, format string, args ...any) *PathError { return fsroot.BadPath(p, format, args...) }

// Policy keys of the limits, as the operator policy spells them.
const (
	LimitQuota      = "sessions.quota"
	LimitTotalBytes = "sessions.max_total_bytes"
	LimitPerOwner   = "sessions.max_per_token"
	LimitMaxFiles   = "sessions.max_files"
	LimitMaxDepth   = fsroot.LimitMaxDepth
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
