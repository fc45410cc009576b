package main

import (
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// watchSignals returns the channel of requests to stop. As PID 1, init gets
// no default action for SIGTERM, SIGINT or SIGHUP, so without a handler
// docker stop would wait out its timeout and then SIGKILL everything.
func watchSignals() <-chan os.Signal {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	// With SIGPIPE notified, a host that closes init's stdout makes writes
	// fail with EPIPE instead of killing init before it has cleaned up.
	// Notify, not Ignore: an ignored disposition survives exec and the
	// child would start with SIGPIPE ignored.
	signal.Notify(make(chan os.Signal, 1), unix.SIGPIPE)
	// The child runs under init's uid and so may signal init. The Go
	// runtime dies of these when sent by kill(2), taking the report with
	// it; notified, a sent one is queued and dropped. A real fault in init
	// still crashes it: only signals from kill(2) are affected.
	signal.Notify(make(chan os.Signal, 1), crashSignals...)
	return sigs
}

// crashSignals are the signals the Go runtime treats as fatal when another
// process sends them.
var crashSignals = []os.Signal{
	unix.SIGQUIT, unix.SIGABRT, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE,
	unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGSTKFLT,
}

// harden runs before the job is read.
func harden() error {
	// The child runs under init's uid; non-dumpable makes /proc/1 root-owned
	// and unptraceable, so the child cannot open /proc/1/fd/1 and forge
	// frames (a fake Result) on init's stdout.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make init non-dumpable: %w", err)
	}
	// PID 1 adopts orphans anyway; as a subreaper init also adopts them when
	// it is not PID 1 (tests, or a runtime that inserts its own init), so
	// reaping and CPU accounting behave the same. gVisor refuses the prctl
	// (EINVAL); as PID 1 init needs it not, so only elsewhere is it fatal.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil && os.Getpid() != 1 {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}
