package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Type says what a frame's payload is.
type Type byte

// Frame types. Values are part of the wire format.
const (
	Stdout Type = 1
	Stderr Type = 2
	Result Type = 3
	// Channel frames carry init's half of the job's side channel
	// (Job.Channel).
	Channel Type = 4
)

func (t Type) String() string {
	switch t {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	case Result:
		return "result"
	case Channel:
		return "channel"
	}
	return fmt.Sprintf("frame(%d)", byte(t))
}

// HeaderSize is the number of bytes before each payload: one type byte and a
// big-endian uint32 payload length.
const HeaderSize = 5

// MaxPayload bounds a single frame so a corrupt or hostile stream cannot make
// the reader allocate without limit. Writers split larger writes.
const MaxPayload = 1 << 20

// ErrTooLarge is returned by Reader.Next for a frame whose declared length
// exceeds MaxPayload.
var ErrTooLarge = errors.New("frame payload exceeds limit")

// Write writes p as one or more frames of type t. It never writes an empty
// frame for a non-empty p and writes exactly one empty frame for an empty p.
func Write(w io.Writer, t Type, p []byte) error {
	var hdr [HeaderSize]byte
	hdr[0] = byte(t)
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), MaxPayload)
		binary.BigEndian.PutUint32(hdr[1:], uint32(n))
		if _, err := w.Write(hdr[:]); err != nil {
			return fmt.Errorf("write %s frame header: %w", t, err)
		}
		if n > 0 {
			if _, err := w.Write(p[:n]); err != nil {
				return fmt.Errorf("write %s frame payload: %w", t, err)
			}
		}
		p = p[n:]
	}
	return nil
}

// Reader decodes frames from a stream.
type Reader struct {
	r   io.Reader
	hdr [HeaderSize]byte
}

// NewReader returns a Reader that decodes frames from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Next returns the next frame. The payload is freshly allocated. At a clean
// end of stream it returns io.EOF; a stream cut inside a frame gives
// io.ErrUnexpectedEOF.
func (fr *Reader) Next() (Type, []byte, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return 0, nil, err
	}
	t := Type(fr.hdr[0])
	n := binary.BigEndian.Uint32(fr.hdr[1:])
	if n > MaxPayload {
		return t, nil, fmt.Errorf("%s frame of %d bytes: %w", t, n, ErrTooLarge)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return t, nil, err
	}
	return t, p, nil
}
