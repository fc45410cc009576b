package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Listen opens the address serve was given: "unix:/path" for a unix socket
// (a stale socket file is replaced, anything else at the path is not; the
// socket is made 0660), else host:port for TCP. Binding TCP to anything but
// a loopback address is refused when no tokens guard the server.
func Listen(addr string, tokens *Tokens) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return listenUnix(path)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: give host:port (127.0.0.1:8080) or unix:/path/to.sock: %w", addr, err)
	}
	if tokens.Empty() && !isLoopback(host) {
		return nil, fmt.Errorf("--listen %s would accept requests from other machines without authentication: give --tokens FILE, or listen on 127.0.0.1 or a unix socket", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("--listen unix: needs a path, e.g. unix:/run/sandboxrun.sock")
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("--listen %s: the path exists and is not a socket; choose another path", path)
		}
		// Left by a server that did not shut down cleanly.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The group may connect too: that is how a host on the same machine,
	// running as another user, is given access.
	if err := os.Chmod(path, 0o660); err != nil { //nolint:gosec // group access is the point
		_ = ln.Close()
		return nil, fmt.Errorf("restrict socket %s: %w", path, err)
	}
	return ln, nil
}

// The bounds of a connection, whatever its client does: a client has
// ReadHeaderTimeout to send a request's headers, which may hold at most
// MaxHeaderBytes (431 past it), and an idle keep-alive connection is closed
// after IdleTimeout. A JSON body has BodyReadTimeout to arrive (408 past
// it), a file upload may send nothing for at most 30 s at a time but has no
// total bound (a large file on a slow link is legitimate); every body is
// bounded in size by its endpoint.
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 64 << 10
)

// HTTPServer is the http.Server serve runs h with: the bounds above, and
// base as every request's parent context.
func HTTPServer(h http.Handler, base func(net.Listener) context.Context) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		BaseContext:       base,
	}
}
