package main

import (
	"errors"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// Exit codes for a job that never ran, as a shell reports them.
const (
	exitNotFound      = 127
	exitCannotExecute = 126
)

// errCommandNotFound marks failures reported as 127; every other failure to
// run the job is 126.
var errCommandNotFound = errors.New("command not found")

// failed is the report of a job that could not be run at all.
func failed(err error) frame.Report {
	code := exitCannotExecute
	if errors.Is(err, errCommandNotFound) {
		code = exitNotFound
	}
	return frame.Report{ExitCode: code, Error: err.Error()}
}

// report builds the Result of a job that ran.
func report(c *child, ex exit, timedOut bool, stdout, stderr *streamRelay, u *jobUsage) frame.Report {
	rep := frame.Report{
		ExitCode:        -1,
		TimedOut:        timedOut,
		StdoutBytes:     stdout.total,
		StderrBytes:     stderr.total,
		StdoutTruncated: stdout.truncated,
		StderrTruncated: stderr.truncated,
		DurationMS:      ex.at.Sub(c.start).Milliseconds(),
	}
	switch {
	case ex.err != nil:
		rep.Error = ex.err.Error()
	case ex.status.Exited():
		rep.ExitCode = ex.status.ExitStatus()
	case ex.status.Signaled():
		rep.Signal = int(ex.status.Signal())
	}
	// Every process of the job that init reaped, each with what it reaped
	// itself: the job's whole cost.
	utime, stime, maxRSS := u.get()
	rep.UserCPUMS = utime.Milliseconds()
	rep.SystemCPUMS = stime.Milliseconds()
	rep.PeakRSSKB = maxRSS
	return rep
}
