package main

import (
	"runtime"
	"sync"
)

// reservedThreads is comfortably above the number of OS threads init ever
// needs at once (main, the wait loop, pipe readers, the stdin feeder,
// signals, timers, GC), plus the two a job may spend: a child started in
// the skill guard's domain (landlock.go) ends the thread it forked from,
// for the prestarted interpreter and for the child.
const reservedThreads = 14

// reserveThreads makes the Go runtime create its OS threads now, while the
// container still has pids to spare. A fork bomb in the child can use up the
// pids limit, and a runtime that then fails to clone a thread aborts: init
// would die without reporting. Threads of goroutines that unlock before
// exiting go back to the runtime's idle pool instead of ending.
func reserveThreads(n int) {
	var started, release sync.WaitGroup
	release.Add(1)
	for range n {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			started.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	started.Wait()
	release.Done()
}
