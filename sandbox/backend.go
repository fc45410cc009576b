package sandbox

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/frame"
)

// What another backend (sandbox/kube) shares with the Docker runner: the
// Spec's preparation, the job sandbox-init reads, the frame decoding into
// bounded captures and the mapping of what was observed onto a Result. One
// implementation serves both, so a Result means the same on every backend.

// Paths inside every sandbox, whatever the backend.
const (
	InitPath     = initPath
	WorkspaceDir = workspaceDir
	ScratchDir   = scratchDir
	// InitPathEnv is init's own PATH (not the script's, which is in the
	// job).
	InitPathEnv = defaultPath
)

// SkillMount is where the skill folder appears inside the sandbox.
func SkillMount(skill string) string { return skillMount(skill) }

// EffectiveTimeout is the Spec's timeout, read from Limits.Timeout or, when
// only the JSON form was filled, Limits.TimeoutSec.
func EffectiveTimeout(l policy.Limits) time.Duration { return effectiveTimeout(l) }

// PrepareSpec fills a Spec's defaults (run id, image, workspace write cap),
// validates it and checks, for a sandbox running as SandboxUID, that the
// host folders exist and can be read. It reports whether the run id was
// generated. A backend that mounts host folders calls it before contacting
// its cluster, so a refusal costs nothing.
func PrepareSpec(spec *Spec, defaultImage string) (generatedID bool, err error) {
	if spec.RunID == "" {
		id, err := newRunID()
		if err != nil {
			return false, err
		}
		spec.RunID, generatedID = id, true
	}
	if spec.Image == "" {
		spec.Image = defaultImage
	}
	if spec.Limits.WorkspaceWriteBytes == 0 {
		spec.Limits.WorkspaceWriteBytes = policy.DefaultWorkspaceWriteBytes
	}
	if err := spec.Validate(); err != nil {
		return false, err
	}
	spec.SkillDir = filepath.Clean(spec.SkillDir)
	if spec.Workspace != "" {
		spec.Workspace = filepath.Clean(spec.Workspace)
	}
	// A foreign identity: the sandbox always runs as SandboxUID there.
	return generatedID, checkHostPaths(spec, identityFor(0, 0))
}

// JobFor is the job sandbox-init receives for spec.
func JobFor(spec *Spec, version string, grace time.Duration) frame.Job {
	return jobFor(spec, version, grace)
}

// OwnerLabels are the labels that name this process as the owner of a
// sandbox, for a reaper: pid, its start time, host. Keys are the Label*
// constants.
func OwnerLabels() map[string]string {
	host, _ := os.Hostname()
	o := ownerOf(os.Getpid(), host)
	l := map[string]string{LabelOwnerPID: strconv.Itoa(o.pid), LabelOwnerHost: o.host}
	if o.start != 0 {
		l[LabelOwnerStart] = strconv.FormatUint(o.start, 10)
	}
	return l
}

// OwnerGone reports whether the owner named by labels (OwnerLabels) is
// known to have ended: it was on this host and its process is gone. An
// owner on another host, or labels that name none, cannot be checked.
func OwnerGone(labels map[string]string, host string) bool {
	pid, err := strconv.Atoi(labels[LabelOwnerPID])
	if err != nil || pid <= 0 || labels[LabelOwnerHost] != host {
		return false
	}
	start, _ := strconv.ParseUint(labels[LabelOwnerStart], 10, 64)
	return !processAlive("/proc", pid, start)
}

// Outcome is what a backend observed of one execution, besides its output.
type Outcome struct {
	// Report is sandbox-init's result frame; nil when it never came.
	Report *frame.Report
	// OOMKilled: the backend saw the memory cgroup kill something.
	OOMKilled bool
	// Backstop: the backend killed the sandbox as no report came in time.
	Backstop bool
	// Cancelled: the caller's context ended first.
	Cancelled bool
	// InitExit is sandbox-init's own exit status, -1 when unknown.
	InitExit int
	// InitLog is the first line of sandbox-init's own stderr.
	InitLog  string
	ImageID  string
	Duration time.Duration
}

// Output receives one execution's frames: stdout and stderr into captures
// bounded by the Spec's OutputBytes and into its live writers.
type Output struct {
	stdout, stderr *capture
	live           [2]*liveWriter
}

// NewOutput returns the Output for spec.
func NewOutput(spec *Spec) *Output {
	return &Output{
		stdout: newCapture(spec.Limits.OutputBytes),
		stderr: newCapture(spec.Limits.OutputBytes),
		live:   [2]*liveWriter{{w: spec.Stdout}, {w: spec.Stderr}},
	}
}

// Decode relays frames from r until it ends and returns the result frame's
// report; onReport, when set, runs as soon as that frame is decoded. A
// stream cut short is an error; frames after the report are dropped.
func (o *Output) Decode(r io.Reader, onReport func()) (*frame.Report, error) {
	return decodeFrames(r, io.MultiWriter(o.stdout, o.live[0]), io.MultiWriter(o.stderr, o.live[1]), onReport)
}

// NewResult is the Result before anything ran: exit code -1, the spec's
// command, image and limits.
func NewResult(spec *Spec) *Result { return newResult(spec) }

// Finish fills res from what was captured and observed, with the same
// conventions on every backend (timeout 124, -N for signal N, OOM, UTF-8,
// JSON output).
func (o *Output) Finish(res *Result, oc Outcome) {
	finish(res, o.stdout, o.stderr, outcome{
		report: oc.Report, oomKilled: oc.OOMKilled, backstop: oc.Backstop, cancelled: oc.Cancelled,
		initExit: oc.InitExit, initLog: oc.InitLog, imageID: oc.ImageID, duration: oc.Duration,
	})
}

// NoReportError is the error for an init that ended without its result
// frame; it matches ErrNoReport.
func NoReportError(initExit int, initLog string, decodeErr error) error {
	return noReport(initExit, initLog, decodeErr)
}

// InitLog keeps the start and the end of sandbox-init's own stderr, bounded.
type InitLog struct{ ht headTail }

// NewInitLog returns an empty InitLog.
func NewInitLog() *InitLog { return &InitLog{ht: headTail{max: initLogMax}} }

func (l *InitLog) Write(p []byte) (int, error) { return l.ht.Write(p) }

// FirstLine is the first line kept, which says what went wrong.
func (l *InitLog) FirstLine() string { return l.ht.firstLine() }

// String is all that was kept.
func (l *InitLog) String() string { return l.ht.String() }
