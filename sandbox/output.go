package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// capture keeps the first cap bytes written to it and counts the rest. It
// is the host's own bound on output, behind sandbox-init's.
type capture struct {
	buf       []byte
	cap       int64
	total     int64
	truncated bool
}

func newCapture(limit int64) *capture { return &capture{cap: limit} }

func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	room := c.cap - int64(len(c.buf))
	if room <= 0 {
		c.truncated = c.truncated || len(p) > 0
		return len(p), nil
	}
	if int64(len(p)) > room {
		c.buf = append(c.buf, p[:room]...)
		c.truncated = true
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// text is the captured output as valid UTF-8. A multi-byte character cut by
// the cap is dropped rather than replaced: the truncation flag says so.
func (c *capture) text() string {
	b := c.buf
	if c.truncated {
		b = trimPartialRune(b)
	}
	return sanitizeUTF8(b)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	// A sequence is at most utf8.UTFMax bytes: look back at most that far
	// for the start byte of the last one.
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing is cut
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// sanitizeUTF8 returns b as a valid UTF-8 string, each invalid byte replaced
// by U+FFFD so nothing disappears silently and byte positions stay
// countable.
func sanitizeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// jsonOutput is stdout parsed as JSON when all of it is one valid JSON
// value, else nil (null in the Result). Truncated output is never JSON: a
// cut number or array could still parse and mislead.
func jsonOutput(stdout string, truncated bool) json.RawMessage {
	if truncated {
		return nil
	}
	trimmed := bytes.TrimSpace([]byte(stdout))
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		return nil
	}
	return json.RawMessage(trimmed)
}

// headTail keeps the first and the last bytes written to it: sandbox-init's
// own diagnostics, whose first line says what went wrong (a Go runtime
// crash starts with it) and whose last lines say where.
type headTail struct {
	head, tail []byte
	max        int // of each part
	dropped    int64
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	if room := h.max - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= h.max {
		h.dropped += int64(len(h.tail) + len(p) - h.max)
		h.tail = append(h.tail[:0], p[len(p)-h.max:]...)
		return n, nil
	}
	if over := len(h.tail) + len(p) - h.max; over > 0 {
		h.dropped += int64(over)
		h.tail = append(h.tail[:0], h.tail[over:]...)
	}
	h.tail = append(h.tail, p...)
	return n, nil
}

// String is everything kept, with a marker where bytes were dropped.
func (h *headTail) String() string {
	s := sanitizeUTF8(h.head)
	if h.dropped > 0 {
		s += fmt.Sprintf("\n[... %d bytes ...]\n", h.dropped)
	}
	return strings.TrimSpace(s + sanitizeUTF8(h.tail))
}

// firstLine is the first line, for one-line error messages.
func (h *headTail) firstLine() string {
	line, _, _ := strings.Cut(strings.TrimSpace(sanitizeUTF8(h.head)), "\n")
	if len(line) > 300 {
		line = line[:300] + "..."
	}
	return line
}

// liveWriter forwards to the caller's writer until it fails once, so a
// broken terminal never stops the capture.
type liveWriter struct {
	w   io.Writer
	err error
}

func (l *liveWriter) Write(p []byte) (int, error) {
	if l.w != nil && l.err == nil {
		_, l.err = l.w.Write(p)
	}
	return len(p), nil
}
