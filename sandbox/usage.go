package sandbox

import (
	"fmt"
	"time"
)

// Usage is one live sample of a running sandbox's resource use. A Runner
// whose backend can read it sends one to Spec.Usage every Spec.UsageEvery
// while the script runs, never after Run returns. JSON field names are
// part of the interface (the stream's usage events).
type Usage struct {
	// ElapsedMS is the time since the job was sent to the sandbox.
	ElapsedMS int64 `json:"elapsed_ms"`
	// CPUPercent is the CPU time the sandbox used over the last interval,
	// as a share of one core: 200 is two cores busy.
	CPUPercent float64 `json:"cpu_percent"`
	// MemoryBytes is the memory the sandbox's cgroup holds now, without
	// the page cache the kernel may drop (inactive files), as `docker
	// stats` counts it.
	MemoryBytes int64 `json:"memory_bytes"`
	// Pids is the number of processes and threads in the sandbox.
	Pids int64 `json:"pids"`
	// WorkspaceBytes is what the run has written to its writable
	// workspace so far, where the backend can tell: the bytes in use on
	// the write layer of the workspace's copy-on-write view (files
	// created or changed, in whole pages; deleting a file of the folder
	// counts nothing). Absent for a read-only workspace, none, or one
	// copied in (Docker where a view cannot reach the engine).
	WorkspaceBytes *int64 `json:"workspace_bytes,omitempty"`
}

// UsageSample is what a backend reads of a sandbox at one moment: CPU is
// cumulative, so the engine turns two samples into a percentage.
type UsageSample struct {
	CPU         time.Duration
	MemoryBytes int64
	Pids        int64
	// WorkspaceBytes is Usage.WorkspaceBytes; nil when not measured.
	WorkspaceBytes *int64
}

// Live usage intervals: the default for a streamed run and the least any
// Spec may ask (an operator may raise it, never lower it).
const (
	DefaultUsageEvery = 2 * time.Second
	MinUsageEvery     = 250 * time.Millisecond
)

// UsagePeaks are the largest values the samples of one run showed.
type UsagePeaks struct {
	CPUPercent  float64
	MemoryBytes int64
	Pids        int64
}

// Add takes one sample into the peaks.
func (p *UsagePeaks) Add(u Usage) {
	p.CPUPercent = max(p.CPUPercent, u.CPUPercent)
	p.MemoryBytes = max(p.MemoryBytes, u.MemoryBytes)
	p.Pids = max(p.Pids, u.Pids)
}

// SetPeaks writes p onto the Result's peak fields (zero: no sample).
func (res *Result) SetPeaks(p UsagePeaks) {
	res.PeakCPUPercent, res.PeakMemoryBytes, res.PeakPids = p.CPUPercent, p.MemoryBytes, p.Pids
}

// checkUsage is Validate's part for the live usage fields.
func (s *Spec) checkUsage() string {
	if s.UsageEvery < 0 || (s.UsageEvery > 0 && s.UsageEvery < MinUsageEvery) {
		return fmt.Sprintf("UsageEvery %s is below %s: sample less often, or set 0 for no live usage", s.UsageEvery, MinUsageEvery)
	}
	return ""
}
