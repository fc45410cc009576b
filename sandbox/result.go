package sandbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/size"
)

// ExitTimeout is the exit code of a script that ran out of time, as
// timeout(1) reports it.
const ExitTimeout = 124

const sigKill = int(syscall.SIGKILL)

// NewResult fills what is known before anything runs.
func NewResult(spec *Spec) *Result {
	l := spec.Limits
	l.Timeout = EffectiveTimeout(l)
	l.TimeoutSec = l.Timeout.Seconds()
	return &Result{
		ID:       spec.RunID,
		Skill:    spec.Skill,
		Command:  slices.Clone(spec.Argv),
		ExitCode: -1,
		Limits:   l,
		Image:    spec.Image,
		Runtime:  spec.Runtime,
	}
}

// Finish maps what was observed onto the Result conventions (docs/cli.md, "The
// result"): exit 124 and a "Timeout:" line on timeout, -N and the signal
// name on death by signal N, oom_killed on OOM, valid UTF-8 output, and
// output parsed as JSON when it is JSON.
func (out *Output) Finish(res *Result, o Outcome) {
	stdout, stderr := out.stdout, out.stderr
	res.DurationMS = o.Duration.Milliseconds()
	res.StdoutBytes, res.StdoutTruncated = stdout.total, stdout.truncated
	res.StderrBytes, res.StderrTruncated = stderr.total, stderr.truncated
	res.OOMKilled = o.OOMKilled
	res.ImageID = o.ImageID
	res.SetPeaks(o.Peaks)

	if rep := o.Report; rep != nil {
		res.StdoutBytes = max(res.StdoutBytes, rep.StdoutBytes)
		res.StderrBytes = max(res.StderrBytes, rep.StderrBytes)
		res.StdoutTruncated = res.StdoutTruncated || rep.StdoutTruncated
		res.StderrTruncated = res.StderrTruncated || rep.StderrTruncated
		res.CPUTimeMS = rep.UserCPUMS + rep.SystemCPUMS
		res.PeakRSSKB = rep.PeakRSSKB
		res.ExitCode = rep.ExitCode
		if rep.Signal > 0 {
			res.ExitCode = -rep.Signal
			res.Signal = signalName(rep.Signal)
		}
		if rep.OOMKills != nil {
			// Counted by the kernel in the sandbox's own memory cgroup.
			res.OOMKilled = res.OOMKilled || *rep.OOMKills > 0
		} else {
			res.OOMKilled = res.OOMKilled || likelyOOM(rep, res.Limits.MemoryBytes)
		}
		res.TimedOut = rep.TimedOut
		res.Error = rep.Error
	} else {
		switch {
		case o.Backstop:
			res.TimedOut = true
			res.Error = "sandbox-init did not report in time"
		case o.Cancelled:
			res.ExitCode, res.Signal = -sigKill, signalName(sigKill)
			res.Error = "cancelled: the sandbox was killed before the script finished"
		case o.OOMKilled:
			// The memory cgroup killed init itself (or everything).
			res.ExitCode, res.Signal = -sigKill, signalName(sigKill)
		default:
			res.Error = fmt.Sprintf("sandbox-init exited (status %d) without reporting a result", o.InitExit)
			if o.InitLog != "" {
				res.Error += ": " + o.InitLog
			}
		}
	}

	res.Stdout = stdout.text()
	res.Stderr = stderr.text()
	if res.TimedOut {
		res.ExitCode, res.Signal = ExitTimeout, ""
		res.Stderr = appendLine(res.Stderr, fmt.Sprintf("Timeout: script exceeded %s limit and was killed", res.Limits.Timeout))
	}
	res.Output = jsonOutput(res.Stdout, res.StdoutTruncated)
	res.Success = res.ExitCode == 0 && !res.TimedOut && !res.OOMKilled
	if res.Error == "" && !res.Success {
		res.Error = failureReason(res)
	}
}

// failureReason says in one phrase why a script did not succeed.
func failureReason(res *Result) string {
	switch {
	case res.TimedOut:
		return fmt.Sprintf("timed out after %s", res.Limits.Timeout)
	case res.OOMKilled:
		return "out of memory: the sandbox exceeded its " + size.Format(res.Limits.MemoryBytes) + " memory limit"
	case res.Signal != "":
		return "killed by signal " + res.Signal
	default:
		return "exit status " + strconv.Itoa(res.ExitCode)
	}
}

// likelyOOM recognises, for an init too old to report the cgroup's OOM-kill
// count, an out-of-memory kill the engine did not flag: some
// engine and cgroup combinations do not set State.OOMKilled when the victim
// is not the container's PID 1. Inside the sandbox nothing else sends
// SIGKILL to the script: init only does so on timeout, which the report
// says. A script that kills itself with SIGKILL after filling most of its
// memory is misreported; that trade is accepted.
func likelyOOM(rep *frame.Report, memoryBytes int64) bool {
	return rep.Signal == sigKill && !rep.TimedOut && memoryBytes > 0 &&
		rep.PeakRSSKB*1024 >= memoryBytes*oomRSSPercent/100
}

// oomRSSPercent is how much of the memory limit the killed script's peak
// resident set must reach for likelyOOM. The rest of the limit goes to
// sandbox-init, the page cache and /tmp.
const oomRSSPercent = 75

func signalName(n int) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return name
	}
	return "SIG" + strconv.Itoa(n)
}

func appendLine(s, line string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + line + "\n"
}
