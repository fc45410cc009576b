package client

import (
	"encoding/json"
	"time"
)

// Result is the outcome of one execution, field for field as the server
// sends it (server/openapi.json, components.schemas.Result).
type Result struct {
	ID    string `json:"id"`
	Skill string `json:"skill"`
	// SkillDigest is the digest of the skill's content as it ran.
	SkillDigest string `json:"skill_digest,omitempty"`
	// Cache is "hit" for an earlier run's Result, "miss" for a run kept
	// for later ones, empty when the run may not be cached.
	Cache           string          `json:"cache,omitempty"`
	Command         []string        `json:"command"`
	ExitCode        int             `json:"exit_code"`
	Success         bool            `json:"success"`
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	StdoutTruncated bool            `json:"stdout_truncated"`
	StderrTruncated bool            `json:"stderr_truncated"`
	StdoutBytes     int64           `json:"stdout_bytes"`
	StderrBytes     int64           `json:"stderr_bytes"`
	Output          json.RawMessage `json:"output"`
	TimedOut        bool            `json:"timed_out"`
	OOMKilled       bool            `json:"oom_killed"`
	Signal          string          `json:"signal"`
	DurationMS      int64           `json:"duration_ms"`
	Error           string          `json:"error,omitempty"`
	Limits          Limits          `json:"limits"`
	Image           string          `json:"image"`
	ImageID         string          `json:"image_id,omitempty"`
	Runtime         string          `json:"runtime"`
	CPUTimeMS       int64           `json:"cpu_time_ms"`
	PeakRSSKB       int64           `json:"peak_rss_kb"`
	// PeakCPUPercent, PeakMemoryBytes and PeakPids are the largest values
	// of the run's live usage samples; zero when none was taken.
	PeakCPUPercent  float64 `json:"peak_cpu_percent,omitempty"`
	PeakMemoryBytes int64   `json:"peak_memory_bytes,omitempty"`
	PeakPids        int64   `json:"peak_pids,omitempty"`
	WorkspaceFull   bool    `json:"workspace_full,omitempty"`
	// WorkspaceUsedBytes is what a writable workspace held when the script
	// ended.
	WorkspaceUsedBytes int64 `json:"workspace_used_bytes,omitempty"`
	// Files are what the run changed in its session's workspace; nil
	// without a session.
	Files []FileChange `json:"files,omitempty"`
	// Egress sums what the run's egress proxy allowed and denied, when it
	// had one; kept as sent.
	Egress json.RawMessage `json:"egress,omitempty"`
}

// Limits are the limits one execution ran under, after the request, the
// skill and the operator's policy were combined.
type Limits struct {
	TimeoutS            float64           `json:"timeout_s"`
	MemoryBytes         int64             `json:"memory_bytes"`
	CPUs                float64           `json:"cpus"`
	Pids                int64             `json:"pids"`
	OutputBytes         int64             `json:"output_bytes"`
	TmpBytes            int64             `json:"tmp_bytes,omitempty"`
	WorkspaceWriteBytes int64             `json:"workspace_write_bytes,omitempty"`
	Network             bool              `json:"network"`
	Egress              json.RawMessage   `json:"egress,omitempty"`
	Sources             map[string]string `json:"sources,omitempty"`
	Clamped             []string          `json:"clamped,omitempty"`
}

// FileChange is a file a run created, modified or deleted in its session's
// workspace.
type FileChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // created, modified, deleted
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

// Params are what the run, exec and python calls share. Zero values are
// left out, so the skill's and the policy's values apply.
type Params struct {
	// Args is a JSON object delivered on the script's stdin.
	Args any `json:"args,omitempty"`
	// Env is extra environment; the server refuses reserved names.
	Env map[string]string `json:"env,omitempty"`
	// Timeout in seconds, held to the policy's ceiling.
	Timeout   float64 `json:"timeout,omitempty"`
	MemoryMiB int64   `json:"memory_mib,omitempty"`
	CPUs      float64 `json:"cpus,omitempty"`
	// Session is a session's id: its folder becomes the run's /workspace.
	Session string `json:"session,omitempty"`
}

// RunRequest runs one of a skill's scripts.
type RunRequest struct {
	Script string `json:"script"`
	// Argv are the script's command-line arguments, never seen by a shell.
	Argv []string `json:"argv,omitempty"`
	// UsageEveryMS samples the sandbox's resource use this often: usage
	// events on a stream, peaks in the Result. Nil: every 2 s on a stream,
	// never otherwise; UsageEvery(0): never. The server raises an interval
	// below its floor to it.
	UsageEveryMS *int64 `json:"usage_every_ms,omitempty"`
	Params
}

// ExecRequest runs a Bash-tool command checked against the skill's
// allowed-tools.
type ExecRequest struct {
	Command string `json:"command"`
	// UsageEveryMS samples the sandbox's resource use this often: usage
	// events on a stream, peaks in the Result. Nil: every 2 s on a stream,
	// never otherwise; UsageEvery(0): never. The server raises an interval
	// below its floor to it.
	UsageEveryMS *int64 `json:"usage_every_ms,omitempty"`
	Params
}

// PythonRequest runs model-written Python in the skill's sandbox.
type PythonRequest struct {
	Code string   `json:"code"`
	Argv []string `json:"argv,omitempty"`
	// UsageEveryMS samples the sandbox's resource use this often: usage
	// events on a stream, peaks in the Result. Nil: every 2 s on a stream,
	// never otherwise; UsageEvery(0): never. The server raises an interval
	// below its floor to it.
	UsageEveryMS *int64 `json:"usage_every_ms,omitempty"`
	Params
}

// ExplainRequest asks what a run would be: exactly one of Script, Command
// and Code says which endpoint's run (Argv not with Command).
type ExplainRequest struct {
	Script  string   `json:"script,omitempty"`
	Command string   `json:"command,omitempty"`
	Code    string   `json:"code,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Params
}

// Explanation is what a run would be, decided as the run decides it.
// Folders are the sandbox's (/workspace), never the server host's.
type Explanation struct {
	Skill             string   `json:"skill"`
	Action            string   `json:"action"` // script, command or python
	Argv              []string `json:"argv,omitempty"`
	Command           string   `json:"command,omitempty"`
	Limits            Limits   `json:"limits"`
	Image             string   `json:"image,omitempty"`
	SkillImage        bool     `json:"skill_image"`
	Runner            string   `json:"runner"`
	Workspace         string   `json:"workspace,omitempty"`
	Session           string   `json:"session,omitempty"`
	WorkspaceWritable bool     `json:"workspace_writable"`
	WriteGranted      bool     `json:"write_granted"`
	Writable          bool     `json:"writable"`
	AllowedTools      []string `json:"allowed_tools"`
	PolicyDigest      string   `json:"policy_digest"`
	// Host says whether the limits were held against the engine's host
	// (CPUs, memory, runtime) as the run holds them.
	Host HostCheck `json:"host"`
}

// HostCheck is whether an explanation asked the engine's host; Reason
// says why not, when not (a run may then still be refused there).
type HostCheck struct {
	Checked bool   `json:"checked"`
	Reason  string `json:"reason,omitempty"`
}

// SkillSummary is one entry of the skills list.
type SkillSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	WhenToUse   string `json:"when_to_use,omitempty"`
	// DisableModelInvocation: run it when named, never show it to a model.
	DisableModelInvocation bool   `json:"disable_model_invocation,omitempty"`
	Version                string `json:"version,omitempty"`
	Digest                 string `json:"digest"`
	// Source is "operator" or "uploaded".
	Source string `json:"source"`
	// Versions are an uploaded skill's, oldest first.
	Versions []SkillVersion `json:"versions,omitempty"`
}

// Activation is what an agent receives when it activates a skill.
type Activation struct {
	Name         string        `json:"name"`
	Description  string        `json:"description"`
	BaseDir      string        `json:"base_dir"`
	Body         string        `json:"body"`
	Scripts      []string      `json:"scripts"`
	References   []string      `json:"references"`
	Assets       []string      `json:"assets"`
	AllowedTools []AllowedTool `json:"allowed_tools"`
}

// AllowedTool is one allowed-tools entry with the operator's grants.
type AllowedTool struct {
	Name string `json:"name"`
	Spec string `json:"spec,omitempty"`
}

// Status is what /healthz and /readyz answer.
type Status struct {
	Status string `json:"status"`
}

// Session is a workspace the server keeps across calls.
type Session struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	BytesUsed  int64     `json:"bytes_used"`
	BytesLimit int64     `json:"bytes_limit"`
}

// StoredFile is a file an upload wrote.
type StoredFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// FileEntry is one entry of a session's file list. A symlink is shown
// with its target, never followed.
type FileEntry struct {
	Path     string    `json:"path"`
	Type     string    `json:"type"` // file, dir, symlink
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256,omitempty"`
	Target   string    `json:"target,omitempty"`
	Modified time.Time `json:"modified"`
}

// Event is one item of a streamed run: chunks of stdout and stderr and
// samples of the sandbox's resource use (Type "usage") as they come, then
// the Result (Type "result") or the error (Type "error") last.
type Event struct {
	Type   string     `json:"type"`
	Data   string     `json:"data,omitempty"`
	Usage  *LiveUsage `json:"usage,omitempty"`
	Result *Result    `json:"result,omitempty"`
	Error  *Error     `json:"error,omitempty"`
}

// LiveUsage is one sample of a running sandbox's resource use, sent every
// UsageEveryMS on a stream (docker, oci, kubernetes).
type LiveUsage struct {
	// ElapsedMS is the time since the job reached the sandbox.
	ElapsedMS int64 `json:"elapsed_ms"`
	// CPUPercent is the CPU used over the last interval, as a share of
	// one core: 200 is two cores busy.
	CPUPercent float64 `json:"cpu_percent"`
	// MemoryBytes is the memory the sandbox holds now.
	MemoryBytes int64 `json:"memory_bytes"`
	// Pids counts its processes and threads.
	Pids int64 `json:"pids"`
	// WorkspaceBytes is what the run has written to its writable
	// workspace so far (the bytes on its copy-on-write view's write
	// layer, in whole pages); nil where not measured (no writable
	// workspace, or one copied in).
	WorkspaceBytes *int64 `json:"workspace_bytes,omitempty"`
}

// UsageEvery is d as a request's UsageEveryMS: the interval of a run's
// usage samples (0: none).
func UsageEvery(d time.Duration) *int64 {
	ms := d.Milliseconds()
	return &ms
}
