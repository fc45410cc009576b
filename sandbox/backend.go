package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/policy"
)

// What every backend (sandbox/docker, sandbox/kube) shares: the Spec's
// preparation, the frame decoding into bounded captures and the mapping of
// what was observed onto a Result. One implementation serves all, so a
// Result means the same on every backend.

// PrepareSpec fills a Spec's defaults (run id, image, workspace write cap),
// validates it and checks, for a sandbox running as ids, that the host
// folders exist and can be read. It reports whether the run id was
// generated. A backend calls it before contacting its engine or cluster,
// so a refusal costs nothing.
func PrepareSpec(spec *Spec, defaultImage string, ids Identity) (generatedID bool, err error) {
	if spec.RunID == "" {
		id, err := NewRunID()
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
	return generatedID, checkHostPaths(spec, ids)
}

// Outcome is what a backend observed of one execution, besides its output.
type Outcome struct {
	// Report is sandbox-init's result frame; nil when it never came.
	Report *frame.Report
	// OOMKilled: the backend saw the memory cgroup kill something (asked
	// only when the report carries no count).
	OOMKilled bool
	// Backstop: the backend killed the sandbox as no report came in time.
	Backstop bool
	// Cancelled: the caller's context ended first.
	Cancelled bool
	// InitExit is sandbox-init's own exit status, -1 when unknown.
	InitExit int
	// InitLog is the first line of sandbox-init's own stderr.
	InitLog string
	// ImageID names the image the sandbox ran, by id.
	ImageID  string
	Duration time.Duration
	// Peaks are the largest values of the run's live usage samples.
	Peaks UsagePeaks
}

// Output receives one execution's frames: stdout and stderr into captures
// bounded by the Spec's OutputBytes and into its live writers.
type Output struct {
	stdout, stderr *capture
	live           [2]*liveWriter
	// firstAt and reportAt are when the first output frame and the
	// result frame arrived (zero: none), for the run's trace. Decode
	// writes them; read them once it has returned.
	firstAt, reportAt time.Time
	// channel receives the payload of Channel frames, the host's end of
	// the job's side channel; nil: such frames are a protocol error.
	channel io.Writer
}

// SetChannel sends the payload of Channel frames (frame.Job.Channel) to w,
// in order, also after the result frame. A write that fails drops the
// rest of the channel, not the run's output.
func (o *Output) SetChannel(w io.Writer) { o.channel = w }

// FirstOutputAt is when the script's first output frame arrived; zero when
// none did. Valid once Decode has returned.
func (o *Output) FirstOutputAt() time.Time { return o.firstAt }

// ReportAt is when the result frame arrived; zero when none did. Valid once
// Decode has returned.
func (o *Output) ReportAt() time.Time { return o.reportAt }

// NewOutput returns the Output for spec.
func NewOutput(spec *Spec) *Output {
	return &Output{
		stdout: newCapture(spec.Limits.OutputBytes),
		stderr: newCapture(spec.Limits.OutputBytes),
		live:   [2]*liveWriter{{w: spec.Stdout}, {w: spec.Stderr}},
	}
}

// Decode relays frames from r until it ends and returns the result frame's
// report; onReport, when set, runs with it as soon as that frame is
// decoded. A
// stream cut short is an error; frames after the report are protocol
// violations and dropped.
func (o *Output) Decode(r io.Reader, onReport func(*frame.Report)) (*frame.Report, error) {
	stdout := io.MultiWriter(o.stdout, o.live[0])
	stderr := io.MultiWriter(o.stderr, o.live[1])
	fr := frame.NewReader(r)
	var rep *frame.Report
	for {
		t, p, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("read frames from sandbox-init: %w", err)
		}
		if t == frame.Channel && o.channel != nil {
			if _, err := o.channel.Write(p); err != nil {
				o.channel = io.Discard
			}
			continue
		}
		if rep != nil {
			continue
		}
		if (t == frame.Stdout || t == frame.Stderr) && o.firstAt.IsZero() {
			o.firstAt = time.Now()
		}
		switch t {
		case frame.Stdout:
			_, _ = stdout.Write(p)
		case frame.Stderr:
			_, _ = stderr.Write(p)
		case frame.Result:
			o.reportAt = time.Now()
			var r frame.Report
			if err := json.Unmarshal(p, &r); err != nil {
				return nil, fmt.Errorf("decode sandbox-init report: %w", err)
			}
			rep = &r
			if onReport != nil {
				onReport(rep)
			}
		default:
			return rep, fmt.Errorf("read frames from sandbox-init: unknown %s", t)
		}
	}
}

// NoReportError is the error for an init that ended without its result
// frame; it matches ErrNoReport.
func NoReportError(initExit int, initLog string, decodeErr error) error {
	detail := fmt.Sprintf("sandbox-init exit status %d", initExit)
	if initLog != "" {
		detail += ": " + initLog
	}
	if decodeErr != nil {
		return fmt.Errorf("%w (%s): %w", ErrNoReport, detail, decodeErr)
	}
	return fmt.Errorf("%w (%s)", ErrNoReport, detail)
}

// initLogMax bounds how much of the start and of the end of sandbox-init's
// own stderr is kept.
const initLogMax = 4 << 10

// InitLog keeps the start and the end of sandbox-init's own stderr, bounded.
// It is safe for concurrent use: a backend's stderr copy (the Kubernetes
// attach's) may still write while the engine reads it.
type InitLog struct {
	mu sync.Mutex
	ht headTail
}

// NewInitLog returns an empty InitLog.
func NewInitLog() *InitLog { return &InitLog{ht: headTail{max: initLogMax}} }

func (l *InitLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ht.Write(p)
}

// FirstLine is the first line kept, which says what went wrong.
func (l *InitLog) FirstLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ht.firstLine()
}

// String is all that was kept.
func (l *InitLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ht.String()
}
