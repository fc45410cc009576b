package testserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/testlog"
)

// Options say how to start the server. Bin is required.
type Options struct {
	// Bin is the sandboxrun binary.
	Bin string
	// Args are its arguments up to and including "serve" and the serve
	// flags, e.g. --skills DIR serve --sessions DIR; Start adds --listen.
	Args []string
	// Env is added to this process's environment.
	Env []string
	// Listen is the address to serve on, or "unix:PATH"; empty picks a
	// free loopback port.
	Listen string
	// Probe is the path that must answer 200: /readyz (the default, which
	// asks the engine and the runner image) or /healthz (which does not).
	Probe string
	// Token, when set, is sent as a bearer token with the probe.
	Token string
	// Wait bounds the wait for the probe (default 30s): it means the
	// server did not come up, never a speed.
	Wait time.Duration
	// Stderr, when set, receives the server's log too.
	Stderr io.Writer
}

// Server is a running `sandboxrun serve`.
type Server struct {
	// URL is http://ADDR, or unix:PATH for a socket.
	URL string
	// Cmd is the process.
	Cmd *exec.Cmd
	// Log holds what the server wrote to stderr so far.
	Log *Log

	done chan struct{}
	exit error
}

// Start starts the server and waits until Probe answers 200. When it does
// not within Wait, or the process ends first, the process is stopped and
// the error holds the server's log.
func Start(o Options) (*Server, error) {
	if o.Bin == "" {
		return nil, errors.New("testserve: no binary: set Options.Bin")
	}
	listen := o.Listen
	if listen == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testserve: picking a port: %w", err)
		}
		listen = ln.Addr().String()
		_ = ln.Close()
	}
	args := append(append([]string(nil), o.Args...), "--listen", listen)
	cmd := exec.Command(o.Bin, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	s := &Server{URL: "http://" + listen, Cmd: cmd, Log: newLog(), done: make(chan struct{})}
	if sock, ok := strings.CutPrefix(listen, "unix:"); ok {
		s.URL = "unix:" + sock
	}
	cmd.Stderr = s.Log
	if o.Stderr != nil {
		cmd.Stderr = io.MultiWriter(s.Log, o.Stderr)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testserve: starting %s: %w", o.Bin, err)
	}
	go func() { s.exit = cmd.Wait(); close(s.done) }()
	if err := s.waitReady(o); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(o Options) error {
	probe, wait := o.Probe, o.Wait
	if probe == "" {
		probe = "/readyz"
	}
	if wait <= 0 {
		wait = 30 * time.Second
	}
	c := s.Client()
	c.Timeout = 5 * time.Second
	deadline := time.Now().Add(wait)
	var last error
	for {
		status, err := get(c, s.BaseURL()+probe, o.Token)
		if err == nil && status == http.StatusOK {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("%s answered %d", probe, status)
		}
		select {
		case <-s.done:
			exit := s.exit
			if exit == nil {
				exit = errors.New("exit status 0")
			}
			return fmt.Errorf("sandboxrun serve ended before %s answered (%w): %s", probe, exit, s.Log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sandboxrun serve not ready after %s: %w: %s", wait, last, s.Log)
		}
	}
}

func get(c *http.Client, url, token string) (int, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// BaseURL is the URL to put paths after: URL, or http://unix for a
// socket (which Client dials).
func (s *Server) BaseURL() string {
	if strings.HasPrefix(s.URL, "unix:") {
		return "http://unix"
	}
	return s.URL
}

// Client is an HTTP client that reaches the server, over its socket when
// it listens on one.
func (s *Server) Client() *http.Client {
	sock, ok := strings.CutPrefix(s.URL, "unix:")
	if !ok {
		return &http.Client{}
	}
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

// Done is closed when the process has ended; Exit then says how.
func (s *Server) Done() <-chan struct{} { return s.done }

// Exit is how the process ended, once Done is closed.
func (s *Server) Exit() error {
	<-s.done
	return s.exit
}

// Stop sends SIGTERM and waits for the process to end; after a minute it
// is killed. Stopping a server that ended is a no-op.
func (s *Server) Stop() {
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		_ = s.Cmd.Process.Kill()
		<-s.done
	}
}

// maxLog bounds what a server's Log keeps: the tail of a long run's log (a
// soak logs a line a request) is what explains its end.
const maxLog = 1 << 20

// Log is a server's stderr, safe to read while it is written. Start keeps
// its last maxLog bytes (newLog).
type Log = testlog.Buffer

func newLog() *Log { return &Log{Max: maxLog} }
