package egress

import (
	"bytes"
	"io"
	"net/http"
	"sync/atomic"
)

// window finds needles in a stream read in pieces: it keeps the last
// longest-1 bytes, so a needle split across two reads is still found.
type window struct {
	needles [][]byte
	keep    int
	tail    []byte
}

func newWindow(needles [][]byte) *window {
	w := &window{needles: needles}
	for _, n := range needles {
		w.keep = max(w.keep, len(n)-1)
	}
	return w
}

// feed scans p after what came before; it returns the index of a needle
// found, or -1.
func (w *window) feed(p []byte) int {
	buf := append(w.tail, p...)
	found := -1
	for i, n := range w.needles {
		if len(n) > 0 && bytes.Contains(buf, n) {
			found = i
			break
		}
	}
	if len(buf) > w.keep {
		buf = buf[len(buf)-w.keep:]
	}
	w.tail = append(w.tail[:0], buf...)
	return found
}

// scanReader refuses a body that carries a placeholder: the read that
// completes one fails, so the request is cut before its end. At the end it
// checks the request's trailers too (filled in when the body is read to
// its end), and fails the last read if one carries a placeholder.
type scanReader struct {
	r       io.ReadCloser
	w       *window
	secrets []Secret
	// trailer is the request's trailer as the server read it.
	trailer func() http.Header
	hit     atomic.Pointer[scanHit]
}

// scanHit is the secret whose placeholder was found, and where.
type scanHit struct{ name, where string }

func newScanReader(r io.ReadCloser, secrets []Secret, trailer func() http.Header) *scanReader {
	var needles [][]byte
	for _, s := range secrets {
		needles = append(needles, []byte(s.Placeholder))
	}
	return &scanReader{r: r, w: newWindow(needles), secrets: secrets, trailer: trailer}
}

func (s *scanReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if i := s.w.feed(p[:n]); i >= 0 {
		s.hit.Store(&scanHit{s.secrets[i].Name, "the body"})
		return 0, ErrExfiltration
	}
	if err == io.EOF && s.trailer != nil {
		for i := range s.secrets {
			if where := inTrailer(s.secrets[i].Placeholder, s.trailer()); where != "" {
				s.hit.Store(&scanHit{s.secrets[i].Name, where})
				return 0, ErrExfiltration
			}
		}
	}
	return n, err
}

func (s *scanReader) Close() error { return s.r.Close() }

// found is the secret whose placeholder the body or a trailer carried,
// and where, or nil.
func (s *scanReader) found() *scanHit { return s.hit.Load() }

// maskReader overwrites every secret value in a stream with '*' of the
// same length, so a server that echoes a credential back (an error page,
// a debugging endpoint) does not hand it to the sandbox, and lengths
// (Content-Length) stay true. It holds back the last longest-1 bytes until
// more arrive or the stream ends.
type maskReader struct {
	r io.ReadCloser
	// trailer, when set, masks the answer's trailers: called when the
	// body ends and when it is closed, as trailers arrive after the body.
	trailer func()
	vals    [][]byte
	keep    int
	buf     []byte
	out     []byte
	err     error
	tmp     []byte
}

func newMaskReader(r io.ReadCloser, vals [][]byte) *maskReader {
	m := &maskReader{r: r, vals: vals, tmp: make([]byte, 32<<10)}
	for _, v := range vals {
		m.keep = max(m.keep, len(v)-1)
	}
	return m
}

func (m *maskReader) Read(p []byte) (int, error) {
	for len(m.out) == 0 {
		if m.err != nil {
			if len(m.buf) == 0 {
				return 0, m.err
			}
			m.out, m.buf = m.buf, nil
			break
		}
		n, err := m.r.Read(m.tmp)
		m.buf = append(m.buf, m.tmp[:n]...)
		mask(m.buf, m.vals)
		m.err = err
		if err != nil && m.trailer != nil {
			m.trailer()
		}
		if len(m.buf) > m.keep {
			cut := len(m.buf) - m.keep
			m.out = append(m.out[:0], m.buf[:cut]...)
			m.buf = append(m.buf[:0], m.buf[cut:]...)
		}
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	return n, nil
}

func (m *maskReader) Close() error {
	err := m.r.Close()
	if m.trailer != nil {
		m.trailer()
	}
	return err
}

// mask overwrites each whole occurrence of vals in b with '*'.
func mask(b []byte, vals [][]byte) {
	for _, v := range vals {
		if len(v) == 0 {
			continue
		}
		for i := 0; ; {
			j := bytes.Index(b[i:], v)
			if j < 0 {
				break
			}
			for k := range v {
				b[i+j+k] = '*'
			}
			i += j + len(v)
		}
	}
}

// maskString is mask for a header value.
func maskString(s string, vals [][]byte) string {
	b := []byte(s)
	mask(b, vals)
	return string(b)
}
