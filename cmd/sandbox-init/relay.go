package main

import (
	"bufio"
	"errors"
	"io"
	"sync"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// chunkSize is the most a relay reads, and relays, at once: half a default
// pipe buffer, so the child's writes rarely wait for init.
const chunkSize = 32 << 10

// frameWriter serialises frames from the two relays and the final result
// onto init's stdout so they never interleave.
type frameWriter struct {
	mu sync.Mutex
	// bw holds a header and a chunk, so each frame is one write(2).
	bw *bufio.Writer
	// err is sticky: once the host stops reading, nothing more is tried.
	err error
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{bw: bufio.NewWriterSize(w, frame.HeaderSize+chunkSize)}
}

// write sends p as frames of type t and flushes them: frames are relayed
// live, not when a buffer happens to fill.
func (fw *frameWriter) write(t frame.Type, p []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err != nil {
		return fw.err
	}
	err := frame.Write(fw.bw, t, p)
	if err == nil {
		err = fw.bw.Flush()
	}
	fw.err = err
	return err
}

// streamRelay copies one of the child's output streams to the host, up to
// limit bytes. Past the limit it keeps reading, counting and dropping, so the
// child is never blocked on a full pipe and init never buffers more than one
// chunk.
//
// Writes to the host are synchronous: within the limit, a host that stops
// reading holds the child back once the pipe buffer is full. That is
// deliberate: the host reads promptly and has a backstop timer, while
// queueing instead would put up to the cap per stream into init's memory,
// which the container's memory limit charges to the job.
type streamRelay struct {
	typ   frame.Type
	limit int64
	out   *frameWriter

	// Set by copyFrom; read only after it returns.
	total     int64 // every byte the child wrote, relayed or not
	truncated bool  // something was not relayed
	sendErr   error // first failure to write to the host
}

func newStreamRelay(t frame.Type, limit int64, out *frameWriter) *streamRelay {
	return &streamRelay{typ: t, limit: limit, out: out}
}

// copyFrom relays src until EOF. It returns the read error that ended it
// early, if any (init closing the pipe after the child exited).
func (r *streamRelay) copyFrom(src io.Reader) error {
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.consume(buf[:n])
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// The rest of the stream is unknown, so it was not relayed.
			r.truncated = true
			return err
		}
	}
}

func (r *streamRelay) consume(p []byte) {
	keep := int64(len(p))
	if room := r.limit - r.total; keep > room {
		keep = max(room, 0)
		r.truncated = true
	}
	r.total += int64(len(p))
	if keep == 0 || r.sendErr != nil {
		return
	}
	// A host that went away must not stop the draining: the child would
	// block on a full pipe.
	r.sendErr = r.out.write(r.typ, p[:keep])
}
