package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// Live usage on a Pod: sandbox-init reads its own cgroup (the container's)
// and its writable workspace's tmpfs, and answers each ask on the usage
// stream it opens on the side channel (frame.StreamUsage). The box reads a
// sample per ask, so a sample is as fresh as the ask; a runner image whose
// init opens no such stream has no live usage (each read waits for the
// stream until its deadline, then fails, and the engine stops asking).

var _ engine.UsageReader = (*box)(nil)

// errNoUsage: the run has no side channel, so no usage stream.
var errNoUsage = errors.New("read usage: the run has no side channel")

// ReadUsage asks init for one sample.
func (b *box) ReadUsage(ctx context.Context) (sandbox.UsageSample, error) {
	if b.ch == nil {
		return sandbox.UsageSample{}, errNoUsage
	}
	return b.ch.usage.read(ctx)
}

// usageStream is the host's end of init's usage stream.
type usageStream struct {
	up   chan struct{} // closed once the stream is there
	done chan struct{} // closed when the channel ends
	once sync.Once
	endO sync.Once

	mu     sync.Mutex // one ask at a time
	s      net.Conn
	r      *bufio.Reader
	broken error
}

func newUsageStream() usageStream {
	return usageStream{up: make(chan struct{}), done: make(chan struct{})}
}

// offerUsage keeps the stream init opened for reads, until the channel
// ends; a second one is refused.
func (c *hostChannel) offerUsage(s net.Conn) {
	u := &c.usage
	took := false
	u.once.Do(func() {
		u.s, u.r, took = s, bufio.NewReaderSize(s, frame.MaxUsageLine), true
		close(u.up)
	})
	if !took {
		c.log.Warn("side channel: a second usage stream; closing it")
		return
	}
	<-u.done
}

// end releases offerUsage: the channel is closing.
func (u *usageStream) end() { u.endO.Do(func() { close(u.done) }) }

// read asks for one sample and reads it, within ctx.
func (u *usageStream) read(ctx context.Context) (sandbox.UsageSample, error) {
	select {
	case <-u.up:
	case <-u.done:
		return sandbox.UsageSample{}, errors.New("read usage: the side channel ended")
	case <-ctx.Done():
		return sandbox.UsageSample{}, fmt.Errorf("read usage: sandbox-init offered no usage stream (a runner image older than this sandboxrun): %w", ctx.Err())
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.broken != nil {
		return sandbox.UsageSample{}, u.broken
	}
	smp, err := u.ask(ctx)
	if err != nil {
		// An answer that came late would be taken for the next one.
		u.broken = err
		_ = u.s.Close()
	}
	return smp, err
}

func (u *usageStream) ask(ctx context.Context) (sandbox.UsageSample, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(time.Minute)
	}
	_ = u.s.SetDeadline(dl)
	if _, err := u.s.Write([]byte{frame.UsageAsk}); err != nil {
		return sandbox.UsageSample{}, fmt.Errorf("read usage: %w", err)
	}
	line, err := u.r.ReadSlice('\n')
	if err != nil {
		return sandbox.UsageSample{}, fmt.Errorf("read usage: %w", err)
	}
	var f frame.UsageSample
	if err := json.Unmarshal(line, &f); err != nil {
		return sandbox.UsageSample{}, fmt.Errorf("read usage: decode sandbox-init's sample: %w", err)
	}
	if f.Error != "" {
		return sandbox.UsageSample{}, fmt.Errorf("read usage: sandbox-init: %s", f.Error)
	}
	if f.CPUNS < 0 || f.MemoryBytes < 0 || f.Pids < 0 || f.WorkspaceBytes != nil && *f.WorkspaceBytes < 0 {
		return sandbox.UsageSample{}, errors.New("read usage: sandbox-init sent a negative figure")
	}
	return sandbox.UsageSample{CPU: time.Duration(f.CPUNS), MemoryBytes: f.MemoryBytes, Pids: f.Pids, WorkspaceBytes: f.WorkspaceBytes}, nil
}
