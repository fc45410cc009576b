package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

const (
	// stderrTailBytes bounds what is kept of a command's stderr for its
	// error message; the full stream goes to the progress writer.
	stderrTailBytes = 8 << 10
	// killGrace is how long a cancelled command gets between SIGTERM and
	// SIGKILL. debootstrap needs it: its exit trap unmounts /proc and /sys
	// from the target, which a SIGKILL would skip.
	killGrace = 15 * time.Second
)

// cmdSpec describes one external command.
type cmdSpec struct {
	name  string
	args  []string
	env   []string // added to the inherited environment (DOCKER_HOST etc. must pass through)
	stdin io.Reader
	// stdout receives the command's stdout; nil discards it.
	stdout io.Writer
	// stderr receives the command's stderr as it comes, in addition to the
	// tail kept for errors; nil keeps only the tail.
	stderr io.Writer
}

// run executes c and waits for it. The command runs in its own process group
// so that cancellation reaches its children (debootstrap's chroot'ed dpkg,
// docker's credential helpers): ctx cancellation sends SIGTERM to the group,
// and SIGKILL follows after killGrace.
func run(ctx context.Context, c cmdSpec) error {
	cmd := exec.CommandContext(ctx, c.name, c.args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdin = c.stdin
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	tail := &tailBuffer{max: stderrTailBytes}
	if c.stderr != nil {
		cmd.Stderr = io.MultiWriter(c.stderr, tail)
	} else {
		cmd.Stderr = tail
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return signalGroup(cmd, syscall.SIGTERM) }
	cmd.WaitDelay = killGrace

	err := cmd.Run()
	if ctx.Err() != nil {
		// The leader may be gone while children it left behind still
		// hold the target directory or the daemon connection.
		_ = signalGroup(cmd, syscall.SIGKILL)
	}
	if err == nil {
		return nil
	}
	code := -1
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = fmt.Errorf("%w: %w", ctxErr, err)
	}
	return &CommandError{
		Command:    append([]string{c.name}, c.args...),
		ExitCode:   code,
		StderrTail: tail.String(),
		Err:        err,
	}
}

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// lookPath finds a program in PATH, then in the sbin directories a non-login
// root shell may not have in PATH (debootstrap lives in /usr/sbin).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/local/sbin", "/usr/sbin", "/sbin"} {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
