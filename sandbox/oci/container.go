package oci

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// container is one running `runtime run`: the job goes in on stdin, the
// frames come back on stdout, the runtime's and init's own diagnostics on
// stderr.
type container struct {
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	initLog *sandbox.InitLog
	exited  chan struct{} // closed when the runtime's process has ended
	waitErr error         // how it ended; read after exited
}

// start runs the runtime on the bundle, in the foreground so that the
// container's stdio are the pipes given to it.
func (r *Runner) start(b *bundle) (*container, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox stdin: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("sandbox stdout: %w", err)
	}
	c := &container{stdin: inW, stdout: outR, initLog: sandbox.NewInitLog(), exited: make(chan struct{})}
	c.cmd = exec.Command(r.runtime, "--root", r.runRoot, "run", "--bundle", b.dir, b.id) //nolint:gosec // the runtime chosen by the operator
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, c.initLog
	c.cmd.Env = []string{"PATH=" + sandbox.InitPathEnv} // nothing of the host's environment
	err = c.cmd.Start()
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(r.runtime), err)
	}
	go func() {
		// No goroutine of exec copies: the pipes are the host's own
		// files, so Wait only waits.
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// wait waits for the runtime's process and closes the host's pipe ends,
// which ends the frame stream.
func (c *container) wait() error {
	<-c.exited
	_ = c.stdout.Close()
	_ = c.stdin.Close()
	return c.waitErr
}

// running reports whether the runtime's process still runs.
func (c *container) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}
