package frame

// Job is what the host sends sandbox-init on its stdin, as one JSON value.
type Job struct {
	// Argv is the child's command line; Argv[0] is looked up in PATH.
	Argv []string `json:"argv"`
	// Env is the child's complete environment as KEY=VALUE pairs. Nothing
	// is inherited from init's own environment.
	Env []string `json:"env"`
	// Dir is the child's working directory.
	Dir string `json:"cwd"`
	// Stdin is written to the child's stdin, which is then closed. A child
	// that never reads it must not block init.
	Stdin []byte `json:"stdin,omitempty"`
	// TimeoutMS is the wall-clock limit; on expiry the child's process group
	// gets SIGTERM, then SIGKILL after GraceMS.
	TimeoutMS int64 `json:"timeout_ms"`
	GraceMS   int64 `json:"grace_ms"`
	// OutputCap is the number of bytes per stream relayed to the host; the
	// rest is read and counted but dropped.
	OutputCap int64 `json:"output_cap"`
	// HoldDir, when set, is a folder (the writable workspace) whose usage
	// init reports, and init stays up after the Result frame until stdin
	// closes, so the host can copy the folder out of a volume that ends
	// with the container.
	HoldDir string `json:"hold_dir,omitempty"`
	// HoldView says HoldDir is the host's copy-on-write view of the
	// workspace, mounted after the container started: init refuses the
	// job if HoldDir is not an overlay then (the view did not reach the
	// container), rather than run the script on an empty folder.
	HoldView bool `json:"hold_view,omitempty"`
	// Egress, when set, has init relay connections to Listen (inside the
	// sandbox, on loopback) to the unix socket Socket, the run's egress
	// proxy. The relay is up before the child starts.
	Egress *Egress `json:"egress,omitempty"`
	// Channel says the host keeps stdin open after the job: from the byte
	// after it, stdin carries the host's half of a multiplexed side
	// channel (see channel.go), and init's half goes out as Channel frames
	// on stdout. A backend whose sandbox has no socket or volume shared
	// with the host (a Pod) carries egress connections and workspace files
	// over it.
	Channel bool `json:"channel,omitempty"`
	// Workspace, with Channel, has init fetch the workspace's files over
	// the channel into Dir before the child starts and, once the Result
	// frame is written, send back what changed there as a layer.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Skill, with Channel, has init fetch the skill's files over the
	// channel into Skill.Dir before the child starts: a sandbox with no
	// volume holding the skill folder gets it this way.
	Skill *SkillFiles `json:"skill,omitempty"`
}

// SkillFiles is a skill folder that travels over the channel.
type SkillFiles struct {
	// Dir is the folder the files go to (the skill's mount point, which
	// init creates): its parent is an empty folder writable by init.
	// The files arrive read-only (folders 0555, files 0444 or 0555) and
	// init leaves Dir itself 0555.
	Dir string `json:"dir"`
	// ModesOnly lets the run go on where the kernel has no Landlock to
	// keep the files from the child (init refuses it otherwise): they are
	// then read-only by mode alone.
	ModesOnly bool `json:"modes_only,omitempty"`
}

// Workspace is a writable workspace that travels over the channel.
type Workspace struct {
	// Dir is the folder the files go to, empty and writable by init.
	Dir string `json:"dir"`
}

// Egress is where sandbox-init relays the run's proxy connections.
type Egress struct {
	// Listen is a loopback TCP address, e.g. 127.0.0.1:3128.
	Listen string `json:"listen"`
	// Socket is the proxy's unix socket inside the sandbox; empty with
	// Channel.
	Socket string `json:"socket,omitempty"`
	// Channel relays each connection as a stream of the job's channel
	// instead (Job.Channel must be set).
	Channel bool `json:"channel,omitempty"`
	// CABundle, with Channel, is the proxy's trust bundle (PEM), which
	// init writes to CAPath before the child starts: a Pod has no volume
	// the host could put it in.
	CABundle []byte `json:"ca_bundle,omitempty"`
	CAPath   string `json:"ca_path,omitempty"`
}

// Report is the payload of the Result frame, the last frame init writes.
type Report struct {
	// ExitCode is the child's exit status, or -1 when it was killed by a
	// signal or never started.
	ExitCode int `json:"exit_code"`
	// Signal is the number of the signal that killed the child, 0 if none.
	Signal   int  `json:"signal"`
	TimedOut bool `json:"timed_out"`
	// StdoutBytes and StderrBytes count everything the child wrote,
	// including what was dropped past OutputCap.
	StdoutBytes     int64 `json:"stdout_bytes"`
	StderrBytes     int64 `json:"stderr_bytes"`
	StdoutTruncated bool  `json:"stdout_truncated"`
	StderrTruncated bool  `json:"stderr_truncated"`
	// UserCPUMS and SystemCPUMS are the child's CPU time, including its
	// reaped descendants.
	UserCPUMS   int64 `json:"user_cpu_ms"`
	SystemCPUMS int64 `json:"system_cpu_ms"`
	// PeakRSSKB is the largest resident set of the child or a descendant.
	PeakRSSKB  int64 `json:"peak_rss_kb"`
	DurationMS int64 `json:"duration_ms"`
	// HoldUsedBytes and HoldFreeBytes are the HoldDir file system's usage
	// when the child ended; free 0 means writes there failed with ENOSPC.
	HoldUsedBytes int64 `json:"hold_used_bytes,omitempty"`
	HoldFreeBytes int64 `json:"hold_free_bytes,omitempty"`
	// OOMKills is how many processes the kernel's OOM killer had killed in
	// the sandbox's memory cgroup when the child ended; absent when init
	// could not read it (then the host asks the engine, which needs the
	// container to have stopped). Hosts that predate the field ignore it.
	OOMKills *int64 `json:"oom_kills,omitempty"`
	// Prestarted is true when the job was handed to an interpreter started
	// before it (see Prestart).
	Prestarted bool `json:"prestarted,omitempty"`
	// Error is set when init could not run the job at all (bad job, exec
	// failure); ExitCode is then 127 for "not found", 126 otherwise.
	Error string `json:"error,omitempty"`
}

// ViewMissing begins init's refusal of a job whose HoldView is set but
// whose HoldDir is not the host's view.
const ViewMissing = "the workspace view did not reach the sandbox"
