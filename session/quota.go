package session

import (
	"fmt"
	"io"
)

// charger counts the bytes a write adds, chunk by chunk while reading, so
// an upload past the room left stops there instead of after the whole body
// was read or written. Bytes charged count as pending in the session and in
// the store's total until settle, so concurrent uploads cannot together
// overshoot the total.
type charger struct {
	s      *Store
	ss     *sess
	credit int64 // bytes of what the write replaces (freed when it lands)
	n      int64 // bytes charged so far
}

func (s *Store) newCharger(ss *sess, credit int64) *charger {
	return &charger{s: s, ss: ss, credit: credit}
}

// charge accounts k more bytes, or says which limit they would cross.
func (c *charger) charge(k int64) error {
	s, ss := c.s, c.ss
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case ss.deleted:
		return fmt.Errorf("%w: %q was deleted during the upload", ErrNotFound, ss.id)
	case ss.used-c.credit+ss.pending+k > s.lim.Quota:
		return quotaError(s.lim.Quota)
	case s.total-c.credit+k > s.lim.MaxTotalBytes:
		return totalError(s.lim.MaxTotalBytes)
	}
	ss.pending += k
	s.total += k
	c.n += k
	return nil
}

// refund gives back k charged bytes (a staged file superseded).
func (c *charger) refund(k int64) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.ss.pending -= k
	c.s.total -= k
	c.n -= k
}

// settle ends the write: the pending bytes leave, and when it landed the
// session's counts move by delta bytes and entries.
func (c *charger) settle(landed bool, delta int64, entries int) {
	s, ss := c.s, c.ss
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.pending -= c.n
	s.total -= c.n
	c.n = 0
	if landed && !ss.deleted {
		s.setUsedLocked(ss, ss.used+delta)
		ss.entries += entries
	}
}

// uploadMeter is the meter of one file upload to a session: a charger
// for the upload's bytes, plus the entries it adds when it lands.
type uploadMeter struct {
	*charger
	entries int
}

func (m uploadMeter) done(landed bool, n int64) {
	if !landed {
		m.settle(false, 0, 0)
		return
	}
	m.settle(true, n-m.credit, m.entries)
}

// room is what may still be written, for bounding reads.
func (c *charger) room() int64 {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.s.roomLocked(c.ss, c.credit)
}

// copyBuf is the chunk in which uploads are read and charged: a refused
// upload has read at most this much past the room.
const copyBuf = 32 << 10

// copy writes r to w, charging each chunk before writing it. It never
// reads more than the room at its start plus one byte (to tell "exactly
// full" from "over").
func (c *charger) copy(w io.Writer, r io.Reader) (int64, error) {
	lr := io.LimitReader(r, c.room()+1)
	buf := make([]byte, copyBuf)
	var total int64
	for {
		n, rerr := lr.Read(buf)
		if n > 0 {
			if err := c.charge(int64(n)); err != nil {
				return total, err
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return total, err
			}
			total += int64(n)
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, fmt.Errorf("reading the upload: %w", rerr)
		}
	}
}
