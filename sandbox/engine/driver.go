package engine

import (
	"context"
	"io"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Driver is a backend seen from the engine: how a Spec becomes a started
// sandbox whose sandbox-init waits for its job. Every method may be called
// concurrently.
type Driver interface {
	// Name is the backend's name in spans and logs: "docker", "oci",
	// "kubernetes".
	Name() string
	// Capacity is what the driver's host offers one sandbox; a zero field
	// is unknown and not checked. The engine asks once and keeps the
	// answer, unless it is an error.
	Capacity(ctx context.Context) (sandbox.HostCapacity, error)
	// Check refuses a Spec this driver cannot run, before a slot is taken
	// and before anything starts (matching sandbox.ErrInvalidSpec or
	// another refusal of package sandbox).
	Check(ctx context.Context, spec *sandbox.Spec) error
	// Plan looks at a run once, before a sandbox is taken for it: the key
	// of the sandbox tmpl (the run's Template) gets, and whatever else the
	// driver's Start and Bind need to know of the run (Docker: the image's
	// usr volume, whether a writable workspace is a view or a copy). An
	// error refuses the run before anything starts.
	Plan(ctx context.Context, tmpl *sandbox.Spec) (Plan, error)
	// Start makes a sandbox for tmpl and starts it; its init then waits
	// for a job. plan is the Plan of the run it is for: its own, or for a
	// warm sandbox the run whose refill starts it, of the same key. ctx is
	// never cancelled while Start runs (the engine detaches it, so a
	// create whose caller left still returns what it made; Left tells a
	// driver the caller is gone); it carries the run's trace. On error a
	// non-nil Box still names what to remove.
	Start(ctx context.Context, tmpl *sandbox.Spec, plan Plan) (Box, error)
}

// Plan is what a driver decided about one run before its sandbox is
// taken.
type Plan struct {
	// Key names the configuration of the run's sandbox: runs of equal
	// keys may take each other's warm sandboxes. Empty: the run is not
	// pooled.
	Key string
	// Data is the driver's own, handed back to its Start and, through
	// Run.Plan, its Bind; the engine never reads it.
	Data any
	// Relays: the driver carries the run's egress to Spec.EgressSocket
	// itself once the run binds (Kubernetes: over the side channel), so a
	// warm sandbox of this plan needs no slot of the engine's.
	Relays bool
}

// Box is one started sandbox. The engine calls Bind, then sends the job on
// Input and decodes Frames; HandBack, when the run holds a writable
// workspace; Kill when the run must end now; End once (or, on a Settler
// whose ending is of no use, Settle), then Remove once.
type Box interface {
	// RunID is the run id the sandbox was made for: a warm one's names the
	// run that takes it when the caller gave none.
	RunID() string
	// Alive reports whether a warm sandbox still waits for its job.
	Alive() bool
	// Bind gives the sandbox what belongs to this run alone (a writable
	// workspace's view, a side channel) and sets the job's fields for it.
	// Nothing of the run has reached the sandbox yet.
	Bind(ctx context.Context, run *Run) error
	// Input is sandbox-init's stdin: a prelude, then the job. Closing it
	// ends the job (and a held init).
	Input() io.WriteCloser
	// Frames is sandbox-init's stdout.
	Frames() io.Reader
	// InitLog holds sandbox-init's own stderr.
	InitLog() *sandbox.InitLog
	// ImageID names the image the sandbox runs, by id ("" unknown). The
	// engine asks once the job is sent, while the script runs.
	ImageID(ctx context.Context) string
	// HandBack gives a writable workspace's changes to run.Spec.Changes,
	// once the report came, while init holds the sandbox up.
	HandBack(ctx context.Context, run *Run) ([]sandbox.FileChange, error)
	// Kill stops the sandbox now. ctx may be done.
	Kill(ctx context.Context) error
	// End waits, bounded by the driver's own call timeout, for the
	// sandbox to end, killing it when it does not, and closes the host's
	// end of its streams; it says how it ended.
	End(ctx context.Context) (Ending, error)
	// Remove removes all of the sandbox. ctx may be done.
	Remove(ctx context.Context) error
}

// Ending is how a sandbox ended, as its driver saw it.
type Ending struct {
	// InitExit is sandbox-init's exit status, -1 when unknown.
	InitExit int
	// OOMKilled: the memory cgroup killed something.
	OOMKilled bool
	// ImageID names the image the sandbox ran, by id ("" unknown).
	ImageID string
}

// Run is one execution as the engine carries it through a Box.
type Run struct {
	Spec *sandbox.Spec
	// Job is what sandbox-init receives; Bind may set its fields.
	Job frame.Job
	// Output receives the frames; Bind may give it a side channel.
	Output *sandbox.Output
	// Plan is the driver's Plan of this run.
	Plan Plan
	// Warm: the sandbox was started ahead of this run.
	Warm bool
	// WorkspaceBase is what a writable workspace already held when Bind
	// shared it, set by Bind: the Result's workspace_used_bytes is this
	// plus what the run wrote.
	WorkspaceBase int64
}

// Held reports whether the run holds a writable workspace, which init
// keeps up after its report for the hand-back.
func (r *Run) Held() bool { return r.Spec.WorkspaceWritable }

// ReportChecker is a Box that may find in init's report that the run never
// began in it (Docker: the workspace's view did not reach the container).
// CheckReport then returns an error matching ErrRetry: the engine removes
// the sandbox and runs the job once more on a new one.
type ReportChecker interface {
	CheckReport(run *Run, rep *frame.Report) error
}

// callerKey holds, in Start's detached context, the run's own (or the
// warm pool's, for a sandbox started ahead); aheadKey marks the latter.
type (
	callerKey struct{}
	aheadKey  struct{}
)

// Caller returns the context Start's ctx is detached from: the run's own,
// or for a sandbox started ahead the warm pool's, which ends when the pool
// closes. Without one it returns ctx.
func Caller(ctx context.Context) context.Context {
	if c, ok := ctx.Value(callerKey{}).(context.Context); ok {
		return c
	}
	return ctx
}

// Left returns the error of the caller's context (Caller), or nil: a
// driver may look between its steps, to start nothing more for a caller
// that has gone. What it made is still returned.
func Left(ctx context.Context) error { return Caller(ctx).Err() }

// Ahead reports whether Start's ctx is the warm pool's: the sandbox waits
// for a run that has not come yet.
func Ahead(ctx context.Context) bool {
	ahead, _ := ctx.Value(aheadKey{}).(bool)
	return ahead
}

// Recoverer is a Box that keeps a second copy of init's frames (Kubernetes:
// the Pod's log), for a run whose stream ended without a report. The
// engine then lets the sandbox end (End) instead of killing it, and
// decodes the copy, without the run's live writers; it serves when it
// decodes cleanly to a report.
type Recoverer interface {
	Recover(ctx context.Context) (io.ReadCloser, error)
}

// Reported is a Box whose init's report may lack the OOM-kill count and
// whose End would then wait long for it (Kubernetes: the kubelet posts a
// container's end up to a second after it). EndReported says at once what
// the driver can read of a sandbox whose init reported, leaving what it
// cannot unknown; the engine calls it instead of End after such a report.
type Reported interface {
	EndReported(ctx context.Context) (Ending, error)
}

// Settler is a Box that lets a sandbox whose init reported go more cheaply
// than End, when how it ended is of no use: Settle waits a moment for it
// to end on its own and closes the host's end of its streams; Remove
// follows whatever it says (Docker waits for the exit without asking the
// engine for the container's state).
type Settler interface {
	Settle(ctx context.Context) error
}
