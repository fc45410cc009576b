package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// channel is init's half of the job's side channel (frame.Job.Channel): a
// yamux client session whose bytes come from stdin after the job and go
// out as Channel frames among the child's output. Init opens every stream;
// the first byte of each says what it carries.
type channel struct {
	sess *yamux.Session
}

// channelConn is the session's connection: reads from the rest of stdin,
// writes as frames. Closing it ends its reads (the session waits for
// them), not stdin or stdout, which are init's.
type channelConn struct {
	in  *io.PipeReader
	out *frameWriter
}

// newChannelConn reads stdin through a pipe, so that closing the conn
// ends a read that stdin would hold until the host hangs up.
func newChannelConn(stdin io.Reader, out *frameWriter) channelConn {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, stdin)
		pw.CloseWithError(err)
	}()
	return channelConn{in: pr, out: out}
}

func (c channelConn) Read(p []byte) (int, error) { return c.in.Read(p) }

func (c channelConn) Write(p []byte) (int, error) {
	if err := c.out.write(frame.Channel, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c channelConn) Close() error { return c.in.Close() }

// openChannel starts the session over in (what stdin holds after the job)
// and out. Nil when the job has no channel.
func openChannel(job *frame.Job, in io.Reader, out *frameWriter, log *slog.Logger) (*channel, error) {
	if !job.Channel {
		return nil, nil
	}
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false // the attach stream has its own
	cfg.MaxStreamWindowSize = frame.ChannelWindow
	cfg.LogOutput = nil
	cfg.Logger = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	// A host that stops reading for this long is gone: the run ends
	// anyway at its backstop.
	cfg.ConnectionWriteTimeout = 30 * time.Second
	sess, err := yamux.Client(newChannelConn(in, out), cfg)
	if err != nil {
		return nil, fmt.Errorf("open the side channel: %w", err)
	}
	return &channel{sess: sess}, nil
}

// open opens a stream of kind k.
func (c *channel) open(k byte) (net.Conn, error) {
	s, err := c.sess.Open()
	if err != nil {
		return nil, fmt.Errorf("open a %q stream on the side channel: %w", k, err)
	}
	if _, err := s.Write([]byte{k}); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open a %q stream on the side channel: %w", k, err)
	}
	return s, nil
}

// close ends the session; safe on nil.
func (c *channel) close() {
	if c != nil {
		_ = c.sess.Close()
	}
}

// errNoChannel: the job asks for something only the channel carries.
var errNoChannel = errors.New("the job has no side channel (channel: true)")
