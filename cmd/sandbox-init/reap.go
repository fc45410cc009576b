package main

import (
	"errors"
	"fmt"
	"sync"
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

// jobUsage adds up the resource use of the processes init reaps for the job,
// each as wait4 reports it (the process and the descendants it reaped):
// what RUSAGE_CHILDREN would say, but without a pre-started interpreter
// that was discarded (prestart.go), which is reaped without counting.
type jobUsage struct {
	mu           sync.Mutex
	utime, stime time.Duration
	maxRSSKB     int64
}

func (u *jobUsage) add(ru *unix.Rusage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.utime += time.Duration(ru.Utime.Nano())
	u.stime += time.Duration(ru.Stime.Nano())
	u.maxRSSKB = max(u.maxRSSKB, ru.Maxrss) // kilobytes on Linux
}

func (u *jobUsage) get() (utime, stime time.Duration, maxRSSKB int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.utime, u.stime, u.maxRSSKB
}

// reap is init's single wait loop. It reaps every process re-parented to
// init, not just the child, counts what each used in u, and reports the
// child's status on exited. It returns, closing done, once init has no
// children left. Nothing else may wait for the child: whoever reaps it
// first takes its status.
func reap(pid int, exited chan<- exit, done chan<- struct{}, u *jobUsage) {
	defer close(done)
	found := false
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		got, err := unix.Wait4(-1, &ws, 0, &ru)
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
		u.add(&ru)
		if got == pid {
			found = true
			exited <- exit{status: ws, at: time.Now()}
		}
	}
}

// reapReady reaps whatever has already exited, so its CPU time and RSS are
// in u before the report is made. It runs only after the child was reaped,
// so it cannot take the child's status from reap.
func reapReady(u *jobUsage) {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || got <= 0 {
			return
		}
		u.add(&ru)
	}
}
