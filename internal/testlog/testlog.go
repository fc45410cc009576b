package testlog

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it, safe to write from several
// goroutines and to read at any time. The zero value is ready and keeps
// everything; a test that asserts something is absent from a log wants
// that. Set Max to keep only the tail of a long run's log.
type Buffer struct {
	// Max, when above zero, bounds what the buffer keeps to the last Max
	// bytes written (earlier bytes are dropped as new ones arrive).
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p, dropping the oldest bytes past Max.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Max > 0 {
		if len(p) > b.Max {
			// Only p's own tail can stay; report all of p as written.
			b.buf.Reset()
			b.buf.Write(p[len(p)-b.Max:])
			return len(p), nil
		}
		if over := b.buf.Len() + len(p) - b.Max; over > 0 {
			b.buf.Next(over)
		}
	}
	return b.buf.Write(p)
}

// String is what the buffer holds: everything written so far, or its last
// Max bytes.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
