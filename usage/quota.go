package usage

import (
	"errors"
	"fmt"
	"time"
)

// ErrQuota means a run was refused before it started because its tenant
// reached a quota; *QuotaError says which and until when.
var ErrQuota = errors.New("quota reached")

// The names of the quotas, as QuotaError.Quota and the policy's keys give
// them.
const (
	QuotaRuns        = "runs"
	QuotaCPUSeconds  = "cpu_seconds"
	QuotaMemory      = "memory_gib_seconds"
	QuotaEgressBytes = "egress_bytes"
	// QuotaStoredBytes bounds a level, not a window: the bytes a token's
	// sessions (with their snapshots) and uploads hold now.
	QuotaStoredBytes = "stored_bytes"
)

// QuotaError is a run refused by a quota.
type QuotaError struct {
	Label  string
	Quota  string        // QuotaRuns, QuotaCPUSeconds, …
	Window time.Duration // the quota's window
	Limit  float64
	Used   float64
	// RetryAfter is how long until the window ends and the next one
	// lets runs in again; 0 for stored_bytes, which no clock frees.
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	if e.Quota == QuotaStoredBytes {
		return fmt.Sprintf("quota stored_bytes reached for token %q: its sessions, snapshots and uploads hold %d bytes of %d; nothing was done; delete sessions, snapshots or uploads to make room",
			e.Label, int64(e.Used), int64(e.Limit))
	}
	return fmt.Sprintf("quota %s per %s reached for token %q: %g used of %g; nothing ran; the next window begins in %s",
		e.Quota, e.Window, e.Label, e.Used, e.Limit, e.RetryAfter.Round(time.Second))
}

// Is makes a QuotaError match ErrQuota.
func (e *QuotaError) Is(target error) bool { return target == ErrQuota }

// RetryAfterSeconds is RetryAfter in whole seconds, at least 1; 0 when no
// wait helps (stored_bytes: only deleting does).
func (e *QuotaError) RetryAfterSeconds() int64 {
	if e.Quota == QuotaStoredBytes {
		return 0
	}
	s := int64((e.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// check returns the first limit of l that used, with pending runs not yet
// ended, leaves no room for one more run.
func (l Limits) check(used Figures, pending int64) (name string, limit, value float64, reached bool) {
	switch {
	case l.Runs > 0 && used.Runs+pending+1 > l.Runs:
		return QuotaRuns, float64(l.Runs), float64(used.Runs + pending), true
	case l.CPUSeconds > 0 && float64(used.CPUTimeMS)/1000 >= l.CPUSeconds:
		return QuotaCPUSeconds, l.CPUSeconds, float64(used.CPUTimeMS) / 1000, true
	case l.MemoryGiBSeconds > 0 && used.MemoryGiBSeconds >= l.MemoryGiBSeconds:
		return QuotaMemory, l.MemoryGiBSeconds, used.MemoryGiBSeconds, true
	case l.EgressBytes > 0 && used.EgressBytes >= l.EgressBytes:
		return QuotaEgressBytes, float64(l.EgressBytes), float64(used.EgressBytes), true
	}
	return "", 0, 0, false
}

// CheckStored refuses an operation of label's that would store more when
// its stored bytes (used, now) would pass limit: with adding, what the
// operation is known to add, when used+adding is over limit; with adding
// 0 (unknown, or nothing), when used has reached limit. limit 0 is none.
func CheckStored(label string, limit, used, adding int64) error {
	switch {
	case limit <= 0:
		return nil
	case adding > 0 && used+adding <= limit:
		return nil
	case adding <= 0 && used < limit:
		return nil
	}
	return &QuotaError{Label: label, Quota: QuotaStoredBytes, Limit: float64(limit), Used: float64(used)}
}
