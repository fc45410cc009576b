package main

import (
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

const (
	// pipeWait bounds the wait for the output pipes to close after the
	// child exited and its group was killed. Only a process that left the
	// group (setsid) can hold them longer; init stops relaying then, and its
	// own exit as PID 1 kills that process with the rest of the namespace.
	pipeWait = 2 * time.Second
	// reapWait bounds the wait for the killed group to be reaped, so their
	// CPU time is in the report, without waiting on escaped processes.
	reapWait = 200 * time.Millisecond
)

// supervise relays the child's output, enforces the timeout, forwards stop
// requests, and reports once the child has exited and its output is drained.
func supervise(job *frame.Job, c *child, out *frameWriter, sigs <-chan os.Signal, log *slog.Logger) frame.Report {
	exited := make(chan exit, 1)
	reaperDone := make(chan struct{})
	var u jobUsage
	go reap(c.pid, exited, reaperDone, &u)

	stdout := newStreamRelay(frame.Stdout, job.OutputCap, out)
	stderr := newStreamRelay(frame.Stderr, job.OutputCap, out)
	var relays sync.WaitGroup
	relays.Go(func() { _ = stdout.copyFrom(c.stdout) })
	relays.Go(func() { _ = stderr.copyFrom(c.stderr) })

	ex, timedOut := awaitExit(job, c, exited, sigs, log)

	// Background processes the job left in its group have no one to report
	// to; kill them so they release the pipes and the CPU.
	if err := c.signalGroup(unix.SIGKILL); err != nil {
		log.Warn("kill leftover processes", "pgid", c.pid, "err", err)
	}
	c.closeStdin()
	if !waitTimeout(&relays, pipeWait) {
		log.Warn("stopped relaying: output still open after the child exited (a process left its process group)", "wait", pipeWait)
	}
	c.closeOutput()
	relays.Wait()
	select {
	case <-reaperDone:
	case <-time.After(reapWait):
	}
	reapReady(&u)
	return report(c, ex, timedOut, stdout, stderr, &u)
}

// awaitExit waits for the child, sending SIGTERM then SIGKILL to its group on
// timeout or on a stop request to init.
func awaitExit(job *frame.Job, c *child, exited <-chan exit, sigs <-chan os.Signal, log *slog.Logger) (exit, bool) {
	var deadline, kill <-chan time.Time
	if job.TimeoutMS > 0 {
		t := time.NewTimer(millis(job.TimeoutMS))
		defer t.Stop()
		deadline = t.C
	}
	timedOut, terminating := false, false
	terminate := func(why string) {
		if terminating {
			return
		}
		terminating = true
		log.Info("terminating the job", "why", why, "grace_ms", job.GraceMS)
		if err := c.signal(unix.SIGTERM); err != nil {
			log.Warn("send SIGTERM", "pgid", c.pid, "err", err)
		}
		// A stopped process runs no SIGTERM handler until continued; this
		// lets it clean up within the grace period instead of being killed.
		if err := c.signal(unix.SIGCONT); err != nil {
			log.Warn("send SIGCONT", "pgid", c.pid, "err", err)
		}
		t := time.NewTimer(millis(job.GraceMS))
		kill = t.C
	}
	for {
		// Exit is checked first so that a child that exited just as a timer
		// fired is neither reported as timed out nor signalled once reaped.
		select {
		case ex := <-exited:
			return ex, timedOut
		default:
		}
		select {
		case ex := <-exited:
			return ex, timedOut
		case <-deadline:
			timedOut = true
			deadline = nil
			terminate("timeout")
		case sig := <-sigs:
			terminate("init got " + sig.String())
		case <-kill:
			kill = nil
			if err := c.signal(unix.SIGKILL); err != nil {
				log.Warn("send SIGKILL", "pgid", c.pid, "err", err)
			}
		}
	}
}

// waitTimeout reports whether wg finished within d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
