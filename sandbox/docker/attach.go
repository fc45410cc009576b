package docker

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// attachment is the attached stream of one container: the job goes in on
// stdin; on stdout come frames, which the engine decodes; on stderr come
// init's own diagnostics. The engine's multiplexed stream is split here.
type attachment struct {
	hj      types.HijackedResponse
	initErr *sandbox.InitLog
	// frames is the reading end of the container's stdout.
	frames *io.PipeReader
	copied chan struct{} // demultiplexing ended
	once   sync.Once
}

// attachAndStart attaches to the container's streams before starting it,
// so no output can be missed, and starts reading.
func (d *Runner) attachAndStart(ctx context.Context, id string) (*attachment, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	sctx, sp := telemetry.Start(cctx, "container.attach")
	hj, err := d.client.ContainerAttach(sctx, id, container.AttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	endSpan(sp, err)
	cancel()
	if err != nil {
		return nil, apiError("attach to sandbox container", err)
	}
	s := &attachment{hj: hj, initErr: sandbox.NewInitLog(), copied: make(chan struct{})}
	s.read()

	cctx, cancel = context.WithTimeout(ctx, d.callTimeout)
	sctx, sp = telemetry.Start(cctx, "container.start")
	err = d.client.ContainerStart(sctx, id, container.StartOptions{})
	endSpan(sp, err)
	cancel()
	if err != nil {
		s.close()
		return nil, apiError("start sandbox container", err)
	}
	return s, nil
}

// read starts demultiplexing the attach stream. Nothing comes on stdout
// before the job, so the pipe waits for the engine's decoder.
func (s *attachment) read() {
	pr, pw := io.Pipe()
	s.frames = pr
	go func() {
		defer close(s.copied)
		_, err := stdcopy.StdCopy(pw, s.initErr, s.hj.Reader)
		pw.CloseWithError(err) // nil: a clean end of stream
	}()
}

// alive reports whether the stream is still open: a container waiting for
// its job that died meanwhile (killed, reaped) must not be used.
func (s *attachment) alive() bool {
	select {
	case <-s.copied:
		return false
	default:
		return true
	}
}

var errStopped = errors.New("frame decoding stopped")

// Write sends bytes to init's stdin: a prelude, then the job. A container
// that never reads its stdin blocks the writer, never the engine, which
// writes the job on a goroutine of its own.
func (s *attachment) Write(b []byte) (int, error) { return s.hj.Conn.Write(b) }

// Close closes init's stdin: the end of the job, or of a held init.
func (s *attachment) Close() error { return s.hj.CloseWrite() }

// close ends the stream and waits for the demultiplexer; a decoder still
// reading sees the end.
func (s *attachment) close() {
	s.once.Do(func() {
		s.hj.Close()
		// Unblock the demultiplexer if nobody reads the frames any more.
		s.frames.CloseWithError(errStopped)
	})
	<-s.copied
}
