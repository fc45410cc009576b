package main

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// exit is how the child ended, as seen by the reaper.
type exit struct {
	status unix.WaitStatus
	at     time.Time
	// err is set when the reaper lost the child; it should not happen.
	err error
}

// reap is init's single wait loop. It reaps every process re-parented to
// init, not just the child, and reports the child's status on exited. It
// returns, closing done, once init has no children left. Nothing else may
// wait for the child: whoever reaps it first takes its status.
func reap(pid int, exited chan<- exit, done chan<- struct{}) {
	defer close(done)
	found := false
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// ECHILD: nothing left to reap. The child is always among
			// those until reaped, so missing it means wait4 failed.
			if !found {
				exited <- exit{at: time.Now(), err: fmt.Errorf("wait4 for the child: %w", err)}
			}
			return
		}
		if got == pid {
			found = true
			exited <- exit{status: ws, at: time.Now()}
		}
	}
}

// reapReady reaps whatever has already exited, so its CPU time and RSS are
// in RUSAGE_CHILDREN before the report is made. It runs only after the child
// was reaped, so it cannot take the child's status from reap.
func reapReady() {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || got <= 0 {
			return
		}
	}
}
