package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// A Pod shares no socket and no volume with sandboxrun, so what Docker
// mounts travels over the run's attach stream instead: after the job,
// stdin carries the host's half of a yamux session and the Channel frames
// on stdout init's half (frame.Job.Channel). Init opens a stream for each
// connection to the egress proxy, which the host hands to the run's proxy
// socket in this process, and, for a writable workspace, one to fetch its
// files and one to hand back what changed, and, for a skill sent rather
// than mounted (WithSkillSend), one to fetch the skill's files. The Pod
// keeps loopback only: a
// proxy or attach that is gone leaves the sandbox no way out.

// maxEgressStreams bounds the proxy connections a run has at once; init
// bounds its own side the same way, so more come only from a sandbox that
// subverted init.
const maxEgressStreams = 64

// proxyDialWait bounds connecting to the run's proxy, which accepts at once.
const proxyDialWait = 5 * time.Second

// handBackTimeout bounds taking a workspace's changes.
const handBackTimeout = frame.ChangesWait

// hostChannel is the host's end of one run's side channel.
type hostChannel struct {
	spec     *sandbox.Spec
	log      *slog.Logger
	in       *io.PipeReader // Channel frames, from Decode
	inW      *io.PipeWriter
	reported chan struct{} // closed when the report is in, or the channel closes
	reportOn sync.Once
	// handedBack closes once the workspace's changes were taken or
	// refused.
	handedBack chan struct{}
	handOnce   sync.Once
	wsSize     int64 // the workspace tmpfs's size, which bounds a layer
	// skill is the packed skill folder init asks for once (WithSkillSend);
	// nil when the run's skill is mounted.
	skill  []byte
	wg     sync.WaitGroup
	egress chan struct{}

	// usage is init's usage stream, once opened (usage.go).
	usage usageStream

	mu       sync.Mutex
	sess     *yamux.Session
	fetched  bool // the workspace was asked for
	skillOut bool // the skill's files were asked for
	handed   bool // its changes were offered
	files    []sandbox.FileChange
	handErr  error
	closed   bool
	reportOK bool
}

// newHostChannel is the host's end of spec's side channel; wsSize is its
// writable workspace's size.
func newHostChannel(spec *sandbox.Spec, wsSize int64, log *slog.Logger) *hostChannel {
	pr, pw := io.Pipe()
	return &hostChannel{spec: spec, wsSize: wsSize, log: log, in: pr, inW: pw, reported: make(chan struct{}),
		handedBack: make(chan struct{}), egress: make(chan struct{}, maxEgressStreams), usage: newUsageStream()}
}

// channelConn joins the frames from init and the attach's stdin.
type channelConn struct {
	io.Reader
	io.Writer
}

func (channelConn) Close() error { return nil }

// start serves the session over stdin, once the job has been written.
func (c *hostChannel) start(stdin io.Writer) error {
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false
	cfg.MaxStreamWindowSize = frame.ChannelWindow
	cfg.LogOutput = nil
	cfg.Logger = slog.NewLogLogger(c.log.Handler(), slog.LevelDebug)
	sess, err := yamux.Server(channelConn{Reader: c.in, Writer: stdin}, cfg)
	if err != nil {
		return fmt.Errorf("open the side channel: %w", err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = sess.Close()
		return nil
	}
	c.sess = sess
	// Counted under the lock that close takes before it waits: a start
	// that close did not see closed has been counted by then.
	c.wg.Go(func() { c.accept(sess) })
	c.mu.Unlock()
	return nil
}

func (c *hostChannel) accept(sess *yamux.Session) {
	for {
		s, err := sess.Accept()
		if err != nil {
			return
		}
		c.wg.Go(func() { c.serve(s) })
	}
}

// serve deals with one stream init opened.
func (c *hostChannel) serve(s net.Conn) {
	defer func() { _ = s.Close() }()
	var kind [1]byte
	if _, err := io.ReadFull(s, kind[:]); err != nil {
		return
	}
	switch kind[0] {
	case frame.StreamEgress:
		c.relayEgress(s)
	case frame.StreamWorkspaceIn:
		c.sendWorkspace(s)
	case frame.StreamSkillIn:
		c.sendSkill(s)
	case frame.StreamWorkspaceOut:
		c.takeChanges(s)
	case frame.StreamUsage:
		c.offerUsage(s)
	default:
		c.log.Warn("side channel: unknown stream kind; closing it", "kind", kind[0])
	}
}

// relayEgress hands one connection to the run's proxy.
func (c *hostChannel) relayEgress(s net.Conn) {
	if c.spec.EgressSocket == "" {
		return
	}
	select {
	case c.egress <- struct{}{}:
		defer func() { <-c.egress }()
	default:
		c.log.Warn("side channel: too many egress connections at once; refusing one", "max", maxEgressStreams)
		return
	}
	up, err := net.DialTimeout("unix", c.spec.EgressSocket, proxyDialWait)
	if err != nil {
		c.log.Warn("egress proxy unreachable; the sandbox has no other way out", "error", err)
		return
	}
	defer func() { _ = up.Close() }()
	var wg sync.WaitGroup
	wg.Go(func() { pump(up, s) })
	pump(s, up)
	wg.Wait()
}

// pump copies src to dst and then closes dst's writing side, so the other
// end sees the end of the stream; on an error it closes both.
func pump(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		_ = src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = dst.Close() // a yamux stream's Close is a half-close
}

// sendWorkspace answers the one request for the workspace's files.
func (c *hostChannel) sendWorkspace(s net.Conn) {
	c.mu.Lock()
	again := c.fetched
	c.fetched = true
	c.mu.Unlock()
	if again || !c.spec.WorkspaceWritable {
		c.log.Warn("side channel: workspace asked for again or without one; refusing")
		return
	}
	if _, err := sandbox.WriteTree(s, c.spec.Workspace, sandbox.SandboxUID, sandbox.SandboxGID); err != nil {
		c.log.Warn("send the workspace's files", "error", err)
		_ = s.Close()
	}
}

// sendSkill answers the one request for the skill's files.
func (c *hostChannel) sendSkill(s net.Conn) {
	c.mu.Lock()
	again := c.skillOut
	c.skillOut = true
	c.mu.Unlock()
	if again || c.skill == nil {
		c.log.Warn("side channel: skill files asked for again or without a skill to send; refusing")
		return
	}
	if _, err := s.Write(c.skill); err != nil {
		c.log.Warn("send the skill's files", "error", err)
	}
}

// takeChanges applies the workspace's changes once the report is in, and
// answers whether it took them. A layer offered without a report (init
// died, or something else spoke in its name) is refused unread.
func (c *hostChannel) takeChanges(s net.Conn) {
	c.mu.Lock()
	again := c.handed
	c.handed = true
	c.mu.Unlock()
	if again || !c.spec.WorkspaceWritable || c.spec.Changes == nil {
		c.log.Warn("side channel: workspace changes offered again or without a workspace; refusing")
		return
	}
	select {
	case <-c.reported:
	case <-time.After(handBackTimeout):
		c.setHandBack(nil, errors.New("workspace changes offered, but no report came"))
		return
	}
	if !c.reportOK {
		c.setHandBack(nil, nil)
		_, _ = s.Write([]byte{frame.ChangesRefused})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handBackTimeout)
	defer cancel()
	// The layer is bounded by what the workspace's tmpfs holds; the
	// margin is for the tar's headers.
	layer := &capped{r: s, n: 2*c.wsSize + 16<<20}
	files, err := c.spec.Changes.ApplyChanges(ctx, layer)
	ack := frame.ChangesTaken
	if err != nil {
		ack = frame.ChangesRefused
		// The owner refused or failed to apply them (a quota, say): its
		// error says which and what to do.
		err = fmt.Errorf("the run's changes to its workspace were not kept: %w", err)
	}
	c.setHandBack(files, err)
	// An applier that refused may have stopped reading: init is still
	// writing, and reads the answer only once it is done.
	_ = s.SetReadDeadline(time.Now().Add(handBackTimeout))
	_, _ = io.Copy(io.Discard, layer)
	_, _ = s.Write([]byte{ack})
}

func (c *hostChannel) setHandBack(files []sandbox.FileChange, err error) {
	c.mu.Lock()
	c.files, c.handErr = files, err
	c.mu.Unlock()
	c.handOnce.Do(func() { close(c.handedBack) })
}

// handBack is what the hand-back took (nil when none) and its error, so
// far.
func (c *hostChannel) handBack() ([]sandbox.FileChange, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files, c.handErr
}

// report says the report is in; ran is whether init ran the job. Only the
// first call counts.
func (c *hostChannel) report(ran bool) {
	c.reportOn.Do(func() {
		c.reportOK = ran
		close(c.reported)
	})
}

// close ends the session and waits for its streams; the changes taken (nil
// when none) and the hand-back's error are then final.
func (c *hostChannel) close() ([]sandbox.FileChange, error) {
	c.report(false) // a hand-back still waiting for the report gets none
	c.mu.Lock()
	c.closed = true
	sess := c.sess
	c.mu.Unlock()
	c.usage.end()
	_ = c.inW.CloseWithError(io.EOF)
	_ = c.in.CloseWithError(io.ErrClosedPipe) // a Decode still writing stops
	if sess != nil {
		_ = sess.Close()
	}
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files, c.handErr
}

// capped reads at most n bytes, then fails: a layer larger than the
// workspace could hold did not come from init.
type capped struct {
	r io.Reader
	n int64
}

var errLayerTooLarge = errors.New("the layer is larger than the workspace could hold")

func (c *capped) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errLayerTooLarge
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}
