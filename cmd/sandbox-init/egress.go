package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

const (
	// maxEgressConns bounds the connections relayed at once; more wait in
	// the listen backlog. Each holds two copy buffers of init's memory,
	// which the container's limit charges to the job.
	maxEgressConns = 64
	egressBufSize  = 16 << 10
	// egressDialWait bounds connecting to the proxy's socket; a live proxy
	// accepts at once.
	egressDialWait = 5 * time.Second
)

// egressRelay carries the job's proxy connections from a loopback TCP port
// to the run's egress proxy, a unix socket mounted from the host. It is
// the sandbox's only way out: when the proxy is gone the dial fails and the
// connection just ends, because there is no route anywhere else.
type egressRelay struct {
	ln   net.Listener
	dial func() (net.Conn, error)
	sem  chan struct{}
	log  *slog.Logger
	wg   sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// startEgressRelay listens before the child starts, so the port is init's
// and the child finds the relay ready; nil e means no relay. Each
// connection goes to the proxy's socket, or over ch as a stream of its own
// when e says so.
func startEgressRelay(e *frame.Egress, ch *channel, log *slog.Logger) (*egressRelay, error) {
	if e == nil {
		return nil, nil
	}
	ap, err := netip.ParseAddrPort(e.Listen)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("%w: egress listen address %q must be a loopback address and port", errBadJob, e.Listen)
	}
	var dial func() (net.Conn, error)
	switch {
	case e.Channel && e.Socket != "":
		return nil, fmt.Errorf("%w: egress names both a socket and the channel: give one", errBadJob)
	case e.Channel && ch == nil:
		return nil, fmt.Errorf("%w: egress over the channel: %w", errBadJob, errNoChannel)
	case e.Channel:
		dial = func() (net.Conn, error) { return ch.open(frame.StreamEgress) }
	case e.Socket == "":
		return nil, fmt.Errorf("%w: egress socket is empty", errBadJob)
	default:
		socket := e.Socket
		dial = func() (net.Conn, error) { return net.DialTimeout("unix", socket, egressDialWait) }
	}
	if err := writeCABundle(e); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", e.Listen)
	if err != nil {
		return nil, fmt.Errorf("egress relay: %w", err)
	}
	r := &egressRelay{ln: ln, dial: dial, sem: make(chan struct{}, maxEgressConns), log: log, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.serve)
	return r, nil
}

func (r *egressRelay) serve() {
	for {
		r.sem <- struct{}{}
		c, err := r.ln.Accept()
		if err != nil {
			<-r.sem
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, most likely: the job holds them.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		r.wg.Go(func() {
			defer func() { <-r.sem }()
			r.relay(c)
		})
	}
}

func (r *egressRelay) relay(c net.Conn) {
	defer closeConns(c)
	up, err := r.dial()
	if err != nil {
		r.log.Warn("egress proxy unreachable; the sandbox has no other way out", "err", err)
		return
	}
	defer closeConns(up)
	if !r.track(c, up) {
		return
	}
	defer r.untrack(c, up)
	var wg sync.WaitGroup
	wg.Go(func() { pump(up, c) })
	pump(c, up)
	wg.Wait()
}

// pump copies src to dst. At src's end it half-closes dst so the other
// side sees the end too; on an error it closes both, which ends the copy
// the other way as well.
func pump(dst, src net.Conn) {
	_, err := io.CopyBuffer(dst, src, make([]byte, egressBufSize))
	if err != nil {
		closeConns(dst, src)
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

func (r *egressRelay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

func (r *egressRelay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
	}
}

// writeCABundle puts the proxy's trust bundle where the job's CA variables
// name it, for a sandbox the host could not mount it into.
func writeCABundle(e *frame.Egress) error {
	if len(e.CABundle) == 0 {
		return nil
	}
	if !e.Channel || !filepath.IsAbs(e.CAPath) {
		return fmt.Errorf("%w: egress CA bundle needs the channel and an absolute ca_path", errBadJob)
	}
	// Certificates only, no key: the sandbox's programs read it.
	if err := os.WriteFile(e.CAPath, e.CABundle, 0o444); err != nil { //nolint:gosec // see above
		return fmt.Errorf("write the egress proxy's CA bundle: %w", err)
	}
	return nil
}

// close stops listening, cuts the relayed connections and waits for the
// relay's goroutines. Safe on a nil relay.
func (r *egressRelay) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		closeConns(c)
	}
	r.mu.Unlock()
	closeConns(r.ln)
	r.wg.Wait()
}

// closeConns closes what is being dropped; the errors say nothing useful.
func closeConns(cs ...io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}
