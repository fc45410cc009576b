package sandbox

import "time"

// ReapOptions say which leaked sandboxes a backend's reaper removes.
type ReapOptions struct {
	// DryRun lists what would be removed without removing anything.
	DryRun bool
	// Grace, when positive, also selects containers older than Grace
	// whatever their owner. Keep it above the longest execution (timeout +
	// grace + backstop margin) and above any warm pool's idle time, so no
	// live run or waiting container is cut.
	Grace time.Duration
	// OnlyDeadOwners selects only containers whose owner process on this
	// host is gone, ignoring Grace: safe to run at every start.
	OnlyDeadOwners bool
	// Host is this host's name as recorded in the labels. Default:
	// os.Hostname(). Owners on other hosts cannot be checked and are
	// selected by age only.
	Host string
}

// Reaped is one container Reap selected.
type Reaped struct {
	ID     string
	Name   string
	RunID  string
	Skill  string
	Age    time.Duration
	Reason string
	// Removed is false in a dry run and when removal failed.
	Removed bool
}
