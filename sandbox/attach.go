package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandboxrun/sandboxrun/sandbox/frame"
)

// initLogMax bounds how much of the start and of the end of sandbox-init's
// own stderr is kept.
const initLogMax = 4 << 10

// session is the attached stream of one container: the job goes in on
// stdin; on stdout come frames, decoded into bounded captures and the
// caller's live writers; on stderr come init's own diagnostics.
type session struct {
	hj     types.HijackedResponse
	stdout *capture
	stderr *capture
	live   [2]*liveWriter
	// initErr, report and decodeErr are written by the reading goroutines
	// and read after close.
	initErr   *headTail
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
func (s *session) bind(spec *Spec) {
	s.bindOnce.Do(func() {
		s.stdout = newCapture(spec.Limits.OutputBytes)
		s.stderr = newCapture(spec.Limits.OutputBytes)
		s.live = [2]*liveWriter{{w: spec.Stdout}, {w: spec.Stderr}}
		close(s.ready)
	})
}

// alive reports whether the stream is still open: a container waiting for
// its job that died meanwhile (killed, reaped) must not be used.
func (s *session) alive() bool {
	select {
	case <-s.copied:
		return false
	default:
		return true
	}
}

// attachAndStart attaches to the container's streams before starting it,
// so no output can be missed, and starts reading.
func (d *Docker) attachAndStart(ctx context.Context, id string) (*session, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	hj, err := d.client.ContainerAttach(cctx, id, container.AttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	cancel()
	if err != nil {
		return nil, apiError("attach to sandbox container", err)
	}
	s := &session{
		hj:      hj,
		stdout:  newCapture(0),
		stderr:  newCapture(0),
		live:    [2]*liveWriter{{}, {}},
		initErr: &headTail{max: initLogMax},
		ready:   make(chan struct{}),
		copied:  make(chan struct{}),
		decoded: make(chan struct{}),
		heard:   make(chan struct{}),
		sent:    make(chan struct{}),
	}
	s.read()

	cctx, cancel = context.WithTimeout(ctx, d.callTimeout)
	err = d.client.ContainerStart(cctx, id, container.StartOptions{})
	cancel()
	if err != nil {
		s.close()
		return nil, apiError("start sandbox container", err)
	}
	return s, nil
}

// read starts demultiplexing the attach stream and decoding frames.
func (s *session) read() {
	pr, pw := io.Pipe()
	go func() {
		defer close(s.copied)
		_, err := stdcopy.StdCopy(pw, s.initErr, s.hj.Reader)
		pw.CloseWithError(err) // nil: a clean end of stream
	}()
	go func() {
		defer close(s.decoded)
		<-s.ready
		s.report, s.decodeErr = decodeFrames(pr,
			io.MultiWriter(s.stdout, s.live[0]), io.MultiWriter(s.stderr, s.live[1]),
			func() { s.reported = true; s.hear() })
		s.hear()
		// Unblock the demultiplexer if the stream goes on regardless.
		pr.CloseWithError(errStopped)
	}()
}

var errStopped = errors.New("frame decoding stopped")

// send writes the job and closes stdin, so init sees the end of the job.
// It runs in its own goroutine: a container that never reads its stdin
// must not block the host.
func (s *session) send(job []byte, keepOpen bool) {
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

func (s *session) hear() { s.heardOnce.Do(func() { close(s.heard) }) }

// release closes stdin, which ends a held sandbox-init.
func (s *session) release() { _ = s.hj.CloseWrite() }

// close ends the stream and waits for every goroutine of the session.
func (s *session) close() {
	s.bindOnce.Do(func() { close(s.ready) }) // never bound: nothing to keep
	s.closeOnce.Do(func() { s.hj.Close() })
	<-s.copied
	<-s.decoded
	if s.sending {
		<-s.sent
	}
}

// decodeFrames relays output frames until the stream ends and returns the
// report of the result frame. Frames after the result are protocol
// violations and dropped.
func decodeFrames(r io.Reader, stdout, stderr io.Writer, onReport func()) (*frame.Report, error) {
	fr := frame.NewReader(r)
	var rep *frame.Report
	for {
		t, p, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("read frames from sandbox-init: %w", err)
		}
		if rep != nil {
			continue
		}
		switch t {
		case frame.Stdout:
			_, _ = stdout.Write(p)
		case frame.Stderr:
			_, _ = stderr.Write(p)
		case frame.Result:
			var r frame.Report
			if err := json.Unmarshal(p, &r); err != nil {
				return nil, fmt.Errorf("decode sandbox-init report: %w", err)
			}
			rep = &r
			if onReport != nil {
				onReport()
			}
		default:
			return rep, fmt.Errorf("read frames from sandbox-init: unknown %s", t)
		}
	}
}
