package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/policy"
)

// Runner runs one execution in its own sandbox. Implementations are safe for
// concurrent use.
type Runner interface {
	Run(ctx context.Context, spec Spec) (*Result, error)
}

// Spec is everything a Runner needs for one execution. Policy decisions
// (which script, which interpreter, which limits) are made before a Spec is
// built; the Runner only enforces them.
type Spec struct {
	// RunID identifies the execution in labels, env and audit; generated
	// when empty.
	RunID string
	// Skill is the skill's name; the skill folder is mounted read-only at
	// /skills/<Skill>.
	Skill        string
	SkillVersion string
	// SkillDir is the skill folder as the host sees it. The Spec says what
	// to mount and how; each backend decides the mechanism: sandbox/docker
	// bind-mounts it read-only, sandbox/kube mounts it from a volume
	// claim or the node (hostPath) read-only, or sends its files over the
	// run's side channel (WithSkillSend).
	SkillDir string
	// SkillDigest, when set, is the digest of SkillDir's content
	// (skillstore.Digest) as the caller last computed it: a backend that
	// copies the folder into the sandbox (sandbox/kube WithSkillSend)
	// keeps its copy by it instead of reading the folder again.
	SkillDigest string
	// Argv is the command run inside the sandbox, e.g.
	// ["python3", "/skills/hello/scripts/echo.py"].
	Argv []string
	// Runtime names the interpreter for the Result (python3, node, bash...).
	Runtime string
	// Env holds caller variables; reserved names are refused by Validate.
	Env map[string]string
	// Stdin is delivered to the script's stdin (JSON arguments).
	Stdin []byte
	// Dir is the working directory inside the sandbox: /workspace (also
	// when empty) or the skill's folder, /skills/<Skill>.
	Dir string
	// Workspace is the folder shared at /workspace; empty for none. It is
	// read-only unless WorkspaceWritable, and then a backend shares a
	// capped copy and hands the changes back (sandbox/docker: a tmpfs
	// volume, never a writable bind mount; sandbox/kube refuses it).
	Workspace         string
	WorkspaceWritable bool
	// WorkspaceFacts, when set, are what the owner of a writable
	// Workspace vouches for its files (a session store, which made every
	// entry itself and counts their bytes exactly): a backend that mounts
	// a copy-on-write view takes them instead of walking the folder at
	// every run, so a run's cost does not grow with the files it leaves
	// alone. Nil: the backend measures the folder (MeasureWorkspace).
	WorkspaceFacts *WorkspaceFacts
	// Changes applies the changes of a run with a writable workspace to
	// the workspace (see ChangeApplier); a backend that hands changes
	// back as a layer needs it.
	Changes ChangeApplier
	// EgressSocket is the host path of the unix socket of the run's egress
	// proxy (package egress), or empty. When set, the socket is mounted in
	// the sandbox, sandbox-init relays ProxyAddr to it and the script's
	// HTTP_PROXY/HTTPS_PROXY point there; the sandbox still has no network
	// interface but loopback. Limits.Network must be false.
	EgressSocket string
	// EgressCA is the host path of the egress proxy's trust bundle (the
	// system's roots and the run's CA), or empty. When set (with
	// EgressSocket), it is mounted read-only at EgressCAPath and over the
	// image's bundle, and the usual CA variables name it, so programs in
	// the sandbox trust the proxy where it ends TLS (hosts with a secret
	// or an HTTP rule). The CA's key never leaves the proxy.
	EgressCA string
	// TraceParent is the W3C traceparent of the request's trace, handed to
	// the script as TRACEPARENT (unless the caller set that variable) so
	// that its own instrumented code joins the trace; empty when untraced.
	TraceParent string
	// Image is the image to run; empty means the default runner image.
	Image  string
	Limits policy.Limits
	// Stdout and Stderr, when set, receive the script's output live as it
	// arrives, in addition to the capped copy in the Result. A write that
	// blocks holds up the run; a write that fails stops further writes to
	// that writer only.
	Stdout io.Writer
	Stderr io.Writer
	// UsageEvery, when not zero, has the Runner sample the sandbox's
	// resource use that often while the script runs (at least
	// MinUsageEvery): each sample goes to Usage, when set, and the
	// Result keeps the peaks. A backend that cannot read its sandbox's
	// use sends nothing.
	UsageEvery time.Duration
	// Usage receives the live samples, in order, from one goroutine;
	// never after Run returns. A call that blocks holds up the next
	// sample, not the run.
	Usage func(Usage)
}

// Result is the outcome of one execution. JSON field names are part of the
// interface.
//
// ExitCode is the script's exit status; 124 when it timed out (TimedOut,
// and a "Timeout:" line ends Stderr); -N when signal N killed it (Signal
// names it); -1 when it never ran. Success is ExitCode 0 without timeout or
// OOM. Stdout and Stderr are valid UTF-8 (invalid bytes become U+FFFD) and
// hold at most Limits.OutputBytes each; the byte counts include what was
// cut. Output is Stdout parsed as JSON when all of it is one JSON value and
// nothing was cut, else null. DurationMS is host wall time from creating (or
// taking a warm) container to the end of its output. Error says why the
// execution failed, when it did.
type Result struct {
	ID    string `json:"id"`
	Skill string `json:"skill"`
	// SkillDigest is the digest of the skill folder's content as it ran
	// ("sha256:<hex>", skillstore.Digest); the Service sets it.
	SkillDigest string `json:"skill_digest,omitempty"`
	// Cache is "hit" when the Result is an earlier run's with the same
	// inputs (its ID is that run's), "miss" when the run was kept for
	// later ones, empty when the run may not be cached (the Service's
	// result cache, policy cache:).
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
	Limits          policy.Limits   `json:"limits"`
	Image           string          `json:"image"`
	ImageID         string          `json:"image_id,omitempty"`
	Runtime         string          `json:"runtime"`
	CPUTimeMS       int64           `json:"cpu_time_ms"`
	PeakRSSKB       int64           `json:"peak_rss_kb"`
	// PeakCPUPercent, PeakMemoryBytes and PeakPids are the largest values
	// of the run's live usage samples (Usage): absent when none was taken
	// (not asked for, a run shorter than one interval, or a backend that
	// cannot read them).
	PeakCPUPercent  float64 `json:"peak_cpu_percent,omitempty"`
	PeakMemoryBytes int64   `json:"peak_memory_bytes,omitempty"`
	PeakPids        int64   `json:"peak_pids,omitempty"`
	// WorkspaceFull is true when a writable workspace reached its write cap
	// (writes past it failed with ENOSPC); WorkspaceUsedBytes is what the
	// workspace held when the script ended.
	WorkspaceFull      bool  `json:"workspace_full,omitempty"`
	WorkspaceUsedBytes int64 `json:"workspace_used_bytes,omitempty"`
	// Files are what the run changed in a writable workspace, as handed
	// back to it: empty when it changed nothing, absent (nil) when the run
	// had no writable workspace or its changes were not handed back.
	Files []FileChange `json:"files,omitzero"`
	// Egress sums what the run's egress proxy allowed and denied, when the
	// run had one; EgressRecord holds every decision, for the audit log.
	Egress       *egresslog.Summary `json:"egress,omitempty"`
	EgressRecord *egresslog.Record  `json:"-"`
	// Started is true once the sandbox's container was running: a Run
	// error with Started set means the sandbox failed mid-run (killed from
	// outside, engine failure), and the Result says as much as is known.
	Started bool `json:"-"`
	// Cause is the error Error was written from when the run failed in
	// the backend (Begin), so a front end can tell it to its own reader
	// (where.Render): the operator with the host's paths, a remote caller
	// without them. Nil when Error came from inside the sandbox.
	Cause error `json:"-"`
}

// The kinds of FileChange.
const (
	FileCreated  = "created"
	FileModified = "modified"
	FileDeleted  = "deleted"
)

// FileChange is one file or symlink a run created, modified or deleted in
// its writable workspace, so a caller knows which outputs to fetch. Folders
// are not listed; a symlink has no size or digest.
type FileChange struct {
	// Path is slash-separated, relative to the workspace.
	Path string `json:"path"`
	// Change is FileCreated, FileModified or FileDeleted.
	Change string `json:"change"`
	Size   int64  `json:"size"`
	// SHA256 is the hex digest of a created or modified regular file.
	SHA256 string `json:"sha256,omitempty"`
}
