package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// child is the job's process. init owns its wait status through the reaper
// (see reap.go); nothing else may wait for it.
type child struct {
	pid   int
	start time.Time

	// Init's ends of the child's stdio pipes. They stay in non-blocking,
	// poller-registered mode, so Close unblocks a pending Read or Write.
	stdin  *os.File
	stdout *os.File
	stderr *os.File

	stdinOnce sync.Once
}

// startChild starts the job in its own process group with exactly the job's
// environment and its stdin fed from job.Stdin.
func startChild(job *frame.Job) (*child, error) {
	path, err := lookPath(job.Argv[0], envValue(job.Env, "PATH"), job.Dir)
	if err != nil {
		return nil, err
	}
	if err := checkDir(job.Dir); err != nil {
		return nil, err
	}
	c, err := spawn(path, job.Argv, job.Env, job.Dir, nil)
	if err != nil {
		return nil, err
	}
	go c.feed(job.Stdin)
	return c, nil
}

// spawn starts path with argv in its own process group, with exactly env,
// in dir, its stdio on pipes to init and, when extra is set, extra as its
// fd 3.
func spawn(path string, argv, env []string, dir string, extra *os.File) (*child, error) {
	var ours, theirs [3]*os.File // stdin, stdout, stderr
	closeAll := func(fs [3]*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := range ours {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ours)
			closeAll(theirs)
			return nil, fmt.Errorf("create stdio pipe: %w", err)
		}
		if i == 0 {
			ours[i], theirs[i] = w, r
		} else {
			ours[i], theirs[i] = r, w
		}
	}

	// Fd switches the child's ends to blocking mode, which is what a child
	// expects of its stdio; init's ends keep the poller.
	files := []uintptr{theirs[0].Fd(), theirs[1].Fd(), theirs[2].Fd()}
	if extra != nil {
		files = append(files, extra.Fd())
	}
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env, // nil means an empty environment, never init's
		Files: files,
		// Its own group, so a timeout or docker stop reaches everything
		// the job spawned, and the group can be killed after it exits.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	}
	start := time.Now()
	pid, err := forkExec(path, argv, attr)
	closeAll(theirs)
	if err != nil {
		closeAll(ours)
		return nil, execError(path, err)
	}
	return &child{pid: pid, start: start, stdin: ours[0], stdout: ours[1], stderr: ours[2]}, nil
}

// feed writes the job's stdin and closes the pipe. A child that never reads
// blocks this goroutine only until closeStdin runs at the child's exit; EPIPE
// (the reader is gone) and the close just end the feeding.
func (c *child) feed(data []byte) {
	defer c.closeStdin()
	if len(data) > 0 {
		_, _ = c.stdin.Write(data)
	}
}

func (c *child) closeStdin() {
	c.stdinOnce.Do(func() { c.stdin.Close() })
}

// closeOutput cuts init's read ends, unblocking the relays when a process
// that escaped the group keeps the pipes open.
func (c *child) closeOutput() {
	c.stdout.Close()
	c.stderr.Close()
}

// signal sends sig to the child's process group, and to the child itself if
// it has moved to another group (setsid, setpgid) so that it cannot escape a
// timeout that way. Only for a child not yet reaped: its pid could be reused
// afterwards.
func (c *child) signal(sig unix.Signal) error {
	err := c.signalGroup(sig)
	if pg, gerr := unix.Getpgid(c.pid); gerr == nil && pg != c.pid {
		err = errors.Join(err, ignoreGone(unix.Kill(c.pid, sig)))
	}
	return err
}

// signalGroup sends sig to the child's process group. The group id stays
// reserved while any member lives, so this is safe after the child is reaped.
func (c *child) signalGroup(sig unix.Signal) error {
	return ignoreGone(unix.Kill(-c.pid, sig))
}

// ignoreGone drops ESRCH: the target is already gone, which was the goal.
func ignoreGone(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}
