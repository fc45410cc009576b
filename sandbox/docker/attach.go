package docker

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/telemetry"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// attachment is the attached stream of one container: the job goes in on
// stdin; on stdout come frames, decoded into bounded captures and the
// caller's live writers; on stderr come init's own diagnostics.
type attachment struct {
	hj types.HijackedResponse
	// out is set by bind, before decoding starts.
	out *sandbox.Output
	// initErr, report and decodeErr are written by the reading goroutines
	// and read after close.
	initErr   *sandbox.InitLog
	report    *frame.Report
	decodeErr error

	ready   chan struct{} // bound to a run: captures and live writers set
	copied  chan struct{} // demultiplexing ended
	decoded chan struct{} // frame decoding ended
	// heard closes when the result frame arrives or decoding ends, which
	// ever is first; reported says which (set before heard closes).
	heard     chan struct{}
	heardOnce sync.Once
	reported  bool
	sent      chan struct{} // the job writer ended
	sending   bool
	bindOnce  sync.Once
	closeOnce sync.Once
}

// bind sets where a run's output goes. It must come before the job: init
// writes nothing on stdout until it has one, and decoding waits for it.
func (s *attachment) bind(spec *sandbox.Spec) {
	s.bindOnce.Do(func() {
		s.out = sandbox.NewOutput(spec)
		close(s.ready)
	})
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
	s := &attachment{
		hj:      hj,
		initErr: sandbox.NewInitLog(),
		ready:   make(chan struct{}),
		copied:  make(chan struct{}),
		decoded: make(chan struct{}),
		heard:   make(chan struct{}),
		sent:    make(chan struct{}),
	}
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

// read starts demultiplexing the attach stream and decoding frames.
func (s *attachment) read() {
	pr, pw := io.Pipe()
	go func() {
		defer close(s.copied)
		_, err := stdcopy.StdCopy(pw, s.initErr, s.hj.Reader)
		pw.CloseWithError(err) // nil: a clean end of stream
	}()
	go func() {
		defer close(s.decoded)
		<-s.ready
		out := s.out
		if out == nil { // closed before a run was bound: keep nothing
			out = sandbox.NewOutput(&sandbox.Spec{})
		}
		s.report, s.decodeErr = out.Decode(pr, func(*frame.Report) { s.reported = true; s.hear() })
		s.hear()
		// Unblock the demultiplexer if the stream goes on regardless.
		pr.CloseWithError(errStopped)
	}()
}

var errStopped = errors.New("frame decoding stopped")

// send writes the job and closes stdin, so init sees the end of the job.
// It runs in its own goroutine: a container that never reads its stdin
// must not block the host.
func (s *attachment) send(job []byte, keepOpen bool) {
	s.sending = true
	go func() {
		defer close(s.sent)
		if _, err := s.hj.Conn.Write(job); err != nil {
			return // the stream ended; the outcome says why
		}
		if !keepOpen {
			_ = s.hj.CloseWrite()
		}
	}()
}

func (s *attachment) hear() { s.heardOnce.Do(func() { close(s.heard) }) }

// release closes stdin, which ends a held sandbox-init.
func (s *attachment) release() { _ = s.hj.CloseWrite() }

// close ends the stream and waits for every goroutine of the attachment.
func (s *attachment) close() {
	s.bindOnce.Do(func() { close(s.ready) }) // never bound: nothing to keep
	s.closeOnce.Do(func() { s.hj.Close() })
	<-s.copied
	<-s.decoded
	if s.sending {
		<-s.sent
	}
}
