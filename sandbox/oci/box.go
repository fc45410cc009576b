package oci

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/cgroup"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// box is one container of the oci backend: its bundle and its `runtime
// run` process.
type box struct {
	r       *Runner
	runID   string
	imageID string
	b       *bundle
	c       *container // nil until started
	// exit is the runtime's exit status once End saw it, -1 unknown.
	exit  int
	ended bool
	// killing: Kill was asked; End asks again until the runtime's
	// process is gone (a kill that came while the runtime was still
	// creating the container finds none to signal).
	killing bool
	// cgroupPath is the container's cgroup below each hierarchy's root,
	// as its bundle names it; usage reads it (ReadUsage).
	cgroupPath string
	usage      *cgroup.Reader
}

var (
	_ engine.Box         = (*box)(nil)
	_ engine.UsageReader = (*box)(nil)
)

func (b *box) RunID() string { return b.runID }

func (b *box) Alive() bool { return b.c != nil && b.c.running() }

// Bind mounts a writable workspace's view on the container's slot: the
// mount reaches the container at once.
func (b *box) Bind(_ context.Context, run *engine.Run) error {
	if !run.Held() {
		return nil
	}
	base, err := b.b.mountView(run.Spec)
	if err != nil {
		return err
	}
	run.WorkspaceBase, run.Job.HoldView = base, true
	return nil
}

func (b *box) Input() io.WriteCloser { return b.c.stdin }

func (b *box) Frames() io.Reader { return b.c.stdout }

func (b *box) InitLog() *sandbox.InitLog { return b.c.initLog }

func (b *box) ImageID(context.Context) string { return b.imageID }

func (b *box) HandBack(ctx context.Context, run *engine.Run) ([]sandbox.FileChange, error) {
	return b.b.handBack(ctx, run.Spec)
}

// Kill signals the container and closes its stdin: an init still waiting
// for its job ends at once.
func (b *box) Kill(ctx context.Context) error {
	if b.c == nil {
		return nil
	}
	b.killing = true
	_ = b.c.stdin.Close()
	return b.r.runtimeCall(ctx, "kill", b.b.id, "KILL")
}

// killAgain is how often End repeats a kill the process outlived.
const killAgain = 250 * time.Millisecond

// End waits for the runtime's process to end, at most callTimeout, killing
// the container when it does not; then the host's end of the frame stream
// is closed.
func (b *box) End(ctx context.Context) (engine.Ending, error) {
	end := engine.Ending{InitExit: -1, ImageID: b.imageID}
	c := b.c
	if c == nil {
		return end, nil
	}
	limit, stop := context.WithTimeout(context.WithoutCancel(ctx), b.r.callTimeout)
	defer stop()
	var killed error
	tick := time.NewTicker(killAgain)
	defer tick.Stop()
wait:
	for {
		select {
		case <-c.exited:
			break wait
		case <-tick.C:
			if b.killing {
				killed = b.Kill(ctx)
			}
		case <-limit.Done():
			killed = b.Kill(ctx)
			break wait
		}
	}
	waitErr := c.wait()
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
		b.exit = 0
	case errors.As(waitErr, &exit):
		b.exit = exit.ExitCode()
	default:
		killed = errors.Join(killed, waitErr)
	}
	b.ended = true
	end.InitExit = b.exit
	return end, killed
}

// Remove deletes the container unless the runtime ran it to a clean end
// (which removes it), then the bundle and the workspace view.
func (b *box) Remove(ctx context.Context) error {
	return b.r.remove(ctx, b.b, !b.ended || b.exit != 0)
}

// ReadUsage reads the container's cgroup, which runc made where the
// bundle says.
func (b *box) ReadUsage(context.Context) (sandbox.UsageSample, error) {
	if b.usage == nil {
		r, err := cgroup.Find(cgroup.Root, b.cgroupPath)
		if err != nil {
			return sandbox.UsageSample{}, err
		}
		b.usage = r
	}
	s, err := b.usage.Read()
	if err == nil && b.b.view != nil {
		if n, werr := b.b.view.Written(); werr == nil {
			s.WorkspaceBytes = &n
		}
	}
	return s, err
}
