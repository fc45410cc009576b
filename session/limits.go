package session

import (
	"log/slog"
	"time"

	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/internal/limit"
)

// Limits are the operator's bounds on sessions. A zero field takes its
// default (WithDefaults); the Service fills them from the operator policy.
type Limits struct {
	// TTL is the idle TTL of a session created without one (default 30m):
	// it expires TTL after its last use.
	TTL time.Duration
	// MaxTTL is the ceiling for a requested TTL (default 24h); asking for
	// more is a *LimitError "sessions.max_ttl".
	MaxTTL time.Duration
	// Quota is the bytes a session's regular files may take (default 1 GiB).
	Quota int64
	// MaxPerOwner bounds the sessions one owner (token) has at once
	// (default 32).
	MaxPerOwner int
	// MaxTotalBytes bounds all sessions' files together (default 10 GiB).
	MaxTotalBytes int64
	// MaxFiles bounds the entries (files, folders, links) of one session
	// (default 10000).
	MaxFiles int
	// MaxDepth bounds the number of elements of a path (default 32).
	MaxDepth int
	// MaxSnapshots bounds the snapshots one session keeps (default 16).
	MaxSnapshots int
}

// Defaults of Limits, in one place.
const (
	DefaultTTL           = 30 * time.Minute
	DefaultMaxTTL        = 24 * time.Hour
	DefaultQuota         = int64(1) << 30
	DefaultMaxPerOwner   = 32
	DefaultMaxTotalBytes = int64(10) << 30
	DefaultMaxFiles      = 10000
	DefaultMaxDepth      = fsroot.DefaultMaxDepth
	DefaultMaxSnapshots  = 16
)

// WithDefaults returns l with every zero (or negative) field set to its
// default.
func (l Limits) WithDefaults() Limits {
	l.TTL = limit.Or(l.TTL, DefaultTTL)
	l.MaxTTL = limit.Or(l.MaxTTL, DefaultMaxTTL)
	if l.TTL > l.MaxTTL {
		// A default above its own ceiling would make every Create fail.
		l.MaxTTL = l.TTL
	}
	l.Quota = limit.Or(l.Quota, DefaultQuota)
	l.MaxPerOwner = limit.Or(l.MaxPerOwner, DefaultMaxPerOwner)
	l.MaxTotalBytes = limit.Or(l.MaxTotalBytes, DefaultMaxTotalBytes)
	l.MaxFiles = limit.Or(l.MaxFiles, DefaultMaxFiles)
	l.MaxDepth = limit.Or(l.MaxDepth, DefaultMaxDepth)
	l.MaxSnapshots = limit.Or(l.MaxSnapshots, DefaultMaxSnapshots)
	return l
}

// Option configures a Store.
type Option func(*options)

type options struct {
	now    func() time.Time
	logger *slog.Logger
	// noSync skips fsync (tests only: SIGKILL keeps the page cache, and
	// fuzzing needs speed). No exported option sets it.
	noSync bool
	// replica names this server in new ids (WithReplica).
	replica string
}

func defaultOptions() options {
	return options{now: time.Now, logger: slog.New(slog.DiscardHandler)}
}

// WithClock sets the clock used for creation times and TTLs (tests).
// Default time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithLogger sets where recovery and cleanup are logged. Default: nowhere
// (the library is silent unless given a logger).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}
