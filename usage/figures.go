package usage

import (
	"time"
)

// Figures are what a tenant used: in one window, or in all (Total).
type Figures struct {
	// Runs counts the executions that ended with a Result (a Result
	// answered from the result cache used nothing and counts nothing).
	Runs int64 `json:"runs"`
	// CPUTimeMS sums the Results' cpu_time_ms.
	CPUTimeMS int64 `json:"cpu_time_ms"`
	// MemoryMiBMS sums each run's memory limit (MiB) times its
	// duration_ms; MemoryGiBSeconds is the same in GiB-seconds.
	MemoryMiBMS      int64   `json:"memory_mib_ms"`
	MemoryGiBSeconds float64 `json:"memory_gib_seconds"`
	// EgressBytes sums what the runs' egress proxies carried both ways.
	EgressBytes int64 `json:"egress_bytes"`
}

// Run is one execution's use, as its Result tells it.
type Run struct {
	CPUTimeMS   int64
	MemoryBytes int64
	DurationMS  int64
	EgressBytes int64
}

func (f *Figures) add(r Run) {
	f.Runs++
	f.CPUTimeMS += r.CPUTimeMS
	f.MemoryMiBMS += (r.MemoryBytes >> 20) * r.DurationMS
	f.EgressBytes += r.EgressBytes
	f.fill()
}

// fill derives MemoryGiBSeconds from MemoryMiBMS.
func (f *Figures) fill() { f.MemoryGiBSeconds = float64(f.MemoryMiBMS) / 1024 / 1000 }

// Window is a tenant's use in the window of the clock now in.
type Window struct {
	// Window is the window's length ("1h0m0s"), WindowSeconds the same in
	// seconds; Start and End bound the current one.
	Window        string    `json:"window"`
	WindowSeconds float64   `json:"window_seconds"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	Used          Figures   `json:"used"`
	// Limits are the tenant's quota for this window, absent when it has
	// none.
	Limits *Limits `json:"limits,omitempty"`
}

// Limits are one window's quota (zero: unbounded).
type Limits struct {
	Runs             int64   `json:"runs,omitempty"`
	CPUSeconds       float64 `json:"cpu_seconds,omitempty"`
	MemoryGiBSeconds float64 `json:"memory_gib_seconds,omitempty"`
	EgressBytes      int64   `json:"egress_bytes,omitempty"`
}

// Tenant is one tenant's use: each window's and in all since the state
// began.
type Tenant struct {
	Label   string   `json:"label"`
	Windows []Window `json:"windows"`
	Total   Figures  `json:"total"`
	// Stored is what the label's sessions and uploads hold now, absent
	// where the figure is unknown (a reader of the state file alone).
	Stored *Stored `json:"stored,omitempty"`
}

// Stored is a level, not a window's sum: the bytes a token's sessions
// (their workspaces and what their snapshots alone hold) and uploaded
// skills take now, and its stored_bytes quota (0: none).
type Stored struct {
	SessionBytes int64 `json:"session_bytes"`
	UploadBytes  int64 `json:"upload_bytes"`
	Bytes        int64 `json:"bytes"`
	Limit        int64 `json:"limit,omitempty"`
}
