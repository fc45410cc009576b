package kube

import (
	"context"
	"io"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// attachment is one attach to a sandbox Pod's container: the job goes in on
// stdin, the frames come out on stdout, sandbox-init's own stderr is kept
// apart. A cold run opens it once its container runs; a warm Pod holds it
// open while sandbox-init waits for a job, so the run that takes the Pod
// skips the attach handshake as well as the Pod's start.
type attachment struct {
	stdin   *io.PipeWriter
	frames  *io.PipeReader
	initLog *sandbox.InitLog
	stop    context.CancelFunc
	done    chan struct{} // closed once the attach has ended
	err     error         // why it ended; read after done
}

// attach attaches to the Pod's container in the background. The
// attach lives until the container closes its streams or stop is called;
// it does not depend on any caller's context, as a warm Pod's outlives the
// refill that opened it.
func (k *Runner) attach(name string) *attachment {
	ctx, stop := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &attachment{stdin: inW, frames: outR, initLog: sandbox.NewInitLog(), stop: stop, done: make(chan struct{})}
	go func() {
		err := k.attacher.Attach(ctx, k.namespace, name, containerName, inR, outW, s.initLog)
		s.err = err
		outW.CloseWithError(err) // nil: the reader sees the end of the stream
		// The executor may still read stdin: it sees its end, not an
		// error it would log; a job write still pending fails.
		_ = inW.Close()
		close(s.done)
	}()
	return s
}

// alive reports whether the attach is still up.
func (s *attachment) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// close ends the attach and waits until it has.
func (s *attachment) close() {
	s.stop()
	<-s.done
}

// await waits until the attach ends by itself, as it does once the Pod's
// container is gone, and ends it after d. Cutting a live attach short
// makes client-go log what its stream copies lost.
func (s *attachment) await(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.close()
	}
}
