package egress

import (
	"fmt"
	"net"
	"os"
	"sync"
)

// maxSocketPath is the longest unix socket path Linux takes (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// maxClients bounds the connections the sandbox holds open to the proxy at
// once; more wait in the socket's backlog.
const maxClients = 64

// listen creates the socket, 0600 and owned by uid:gid when given.
func listen(socket string, uid, gid int) (net.Listener, error) {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: listen on %s: %w", socket, err)
	}
	err = os.Chmod(socket, 0o600)
	if err == nil && uid >= 0 && uid != os.Getuid() {
		err = os.Lchown(socket, uid, gid)
	}
	if err != nil {
		closeAll(ln)
		return nil, fmt.Errorf("egress proxy: give the socket to the sandbox user (uid %d): %w", uid, err)
	}
	return ln, nil
}

// limitListener holds at most cap(sem) accepted connections at once.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &releaseConn{Conn: c, release: func() { <-l.sem }}, nil
}

type releaseConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *releaseConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes, for tunnels.
func (c *releaseConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
