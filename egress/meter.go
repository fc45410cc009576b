package egress

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// budget is the run's allowance of upstream connections and bytes.
type budget struct {
	maxConns, maxBytes int64
	conns, bytes       atomic.Int64
	connsHit, bytesHit atomic.Bool
}

// LimitError says which of the run's limits was reached.
type LimitError struct {
	// What is "connections" or "bytes".
	What string
	Max  int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("the run's egress %s limit (%d) is reached; the operator's egress.max_%s sets it", e.What, e.Max, e.What)
}

// Is makes every reached limit match ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// takeConn counts one upstream connection, or refuses it past the limit.
func (b *budget) takeConn() error {
	if b.conns.Add(1) > b.maxConns {
		b.conns.Add(-1)
		b.connsHit.Store(true)
		return &LimitError{What: "connections", Max: b.maxConns}
	}
	return nil
}

// spend counts n bytes; false once the run is past its limit.
func (b *budget) spend(n int) error {
	if b.bytes.Add(int64(n)) > b.maxBytes {
		b.bytesHit.Store(true)
		return &LimitError{What: "bytes", Max: b.maxBytes}
	}
	return nil
}

// left refuses more traffic once the byte limit is reached.
func (b *budget) left() error {
	if b.bytes.Load() >= b.maxBytes {
		b.bytesHit.Store(true)
		return &LimitError{What: "bytes", Max: b.maxBytes}
	}
	return nil
}

// idler pushes the deadlines of an exchange's connections forward whenever
// either moves data, so the exchange ends after a quiet period, not after a
// fixed time. Deadlines move at most every timeout/8, which keeps timer
// churn off the data path.
type idler struct {
	timeout time.Duration
	mu      sync.Mutex
	conns   []net.Conn
	last    atomic.Int64
}

func newIdler(timeout time.Duration, conns ...net.Conn) *idler {
	i := &idler{timeout: timeout}
	for _, c := range conns {
		i.add(c)
	}
	return i
}

// add starts watching c with a full timeout ahead.
func (i *idler) add(c net.Conn) {
	i.mu.Lock()
	i.conns = append(i.conns, c)
	i.mu.Unlock()
	_ = c.SetDeadline(time.Now().Add(i.timeout))
}

func (i *idler) touch() {
	now := time.Now()
	if now.UnixNano()-i.last.Load() < int64(i.timeout/8) {
		return
	}
	i.last.Store(now.UnixNano())
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, c := range i.conns {
		_ = c.SetDeadline(now.Add(i.timeout))
	}
}

// upstream is a connection the proxy opened: its bytes count against the
// run's budget and toward its decision, and its traffic keeps it alive.
type upstream struct {
	net.Conn
	b        *budget
	idle     *idler
	up, down atomic.Int64
	limitErr atomic.Pointer[LimitError]
}

func (c *upstream) Read(p []byte) (int, error) {
	if err := c.b.left(); err != nil {
		return 0, c.fail(err)
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.down.Add(int64(n))
		c.idle.touch()
		_ = c.b.spend(n) // the next call stops it: at most one read past the limit
	}
	return n, err
}

func (c *upstream) Write(p []byte) (int, error) {
	if err := c.b.left(); err != nil {
		return 0, c.fail(err)
	}
	// Counted before the write, so the count is complete by the time the
	// other side can answer; what did not go out is taken back.
	c.up.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	c.up.Add(int64(n - len(p)))
	if n > 0 {
		c.idle.touch()
		_ = c.b.spend(n)
	}
	return n, err
}

func (c *upstream) fail(err error) error {
	if le, ok := err.(*LimitError); ok { //nolint:errorlint // built right here, never wrapped
		c.limitErr.CompareAndSwap(nil, le)
	}
	return err
}

// CloseWrite half-closes the connection.
func (c *upstream) CloseWrite() error { return closeWrite(c.Conn) }

// client is the sandbox's end of a tunnel: reads come through r (which may
// hold bytes already read past the CONNECT request), and traffic keeps the
// tunnel alive.
type client struct {
	net.Conn
	r    io.Reader
	idle *idler
}

func (c *client) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.idle.touch()
	}
	return n, err
}

func (c *client) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.idle.touch()
	}
	return n, err
}

func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
