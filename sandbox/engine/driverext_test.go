package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// countingDriver counts the Capacity asks.
type countingDriver struct {
	*fakeDriver
	asked atomic.Int32
}

func (d *countingDriver) Capacity(ctx context.Context) (sandbox.HostCapacity, error) {
	d.asked.Add(1)
	return d.fakeDriver.Capacity(ctx)
}

// With a CapacityTTL the driver is asked again once its answer is that
// old, and not before.
func TestCapacityIsAskedAgainAfterItsTTL(t *testing.T) {
	d := &countingDriver{fakeDriver: &fakeDriver{capacity: sandbox.HostCapacity{MilliCPUs: 1500}}}
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	o := sandbox.DefaultOptions("test")
	e := engine.New(d, engine.Config{Options: o, CapacityTTL: time.Minute, Now: clock})
	s := spec(t)
	s.Limits.CPUs = 1.6
	require.ErrorIs(t, e.CheckSpec(context.Background(), s), sandbox.ErrBeyondHost, "a share of a CPU is checked in thousandths")
	require.ErrorIs(t, e.CheckSpec(context.Background(), s), sandbox.ErrBeyondHost)
	require.EqualValues(t, 1, d.asked.Load())
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	require.ErrorIs(t, e.CheckSpec(context.Background(), s), sandbox.ErrBeyondHost)
	require.EqualValues(t, 2, d.asked.Load())
}

// relayDriver pools every template alike, says it relays egress itself,
// and records what each Start saw.
type relayDriver struct {
	*fakeDriver
	mu      sync.Mutex
	sockets []string
	aheads  []bool
	callers []context.Context
}

func (d *relayDriver) Plan(ctx context.Context, tmpl *sandbox.Spec) (engine.Plan, error) {
	p, err := d.fakeDriver.Plan(ctx, tmpl)
	p.Relays = true
	return p, err
}

func (d *relayDriver) Start(ctx context.Context, tmpl *sandbox.Spec, p engine.Plan) (engine.Box, error) {
	d.mu.Lock()
	d.sockets = append(d.sockets, tmpl.EgressSocket)
	d.aheads = append(d.aheads, engine.Ahead(ctx))
	d.callers = append(d.callers, engine.Caller(ctx))
	d.mu.Unlock()
	return d.fakeDriver.Start(ctx, tmpl, p)
}

// A driver that relays egress itself gets warm egress sandboxes without a
// slot of the engine's: its Start sees the run's own socket, and a run
// takes the warm sandbox. Start tells a warm start from a run's (Ahead),
// and its Caller ends when the pool closes.
func TestRelayingDriverPoolsEgressRunsWithoutSlots(t *testing.T) {
	d := &relayDriver{fakeDriver: &fakeDriver{pooled: true}}
	o := sandbox.DefaultOptions("test")
	o.Version, o.WarmSize = "test", 1
	e := engine.New(d, engine.Config{Options: o, Identity: sandbox.IdentityFor(0, 0)})
	s := spec(t)
	dir, err := os.MkdirTemp("", "relay")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "proxy.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	if os.Geteuid() == 0 {
		uid, gid := sandbox.UserIDs()
		require.NoError(t, os.Lchown(ln.Addr().String(), uid, gid))
	}
	s.EgressSocket = ln.Addr().String()
	for range 2 {
		res, err := e.Run(context.Background(), s)
		require.NoError(t, err)
		require.True(t, res.Success, res.Error)
		require.Eventually(t, func() bool { return e.PoolStats().Ready == 1 }, 5*time.Second, 5*time.Millisecond)
	}
	require.EqualValues(t, 1, e.PoolStats().Hits, "the second run was warm")
	require.NoError(t, e.Close(context.Background()))
	d.mu.Lock()
	defer d.mu.Unlock()
	require.Equal(t, []bool{false, true}, d.aheads[:2], "a run's start, then the pool's")
	for _, sock := range d.sockets {
		require.Equal(t, s.EgressSocket, sock, "no slot stands in for the proxy")
	}
	require.Error(t, d.callers[1].Err(), "the pool's context ended with the engine")
	require.NoError(t, d.callers[0].Err(), "the run's own did not")
}

// recoverDriver starts boxes whose stream ends, cleanly, without a
// report, and that keep a second copy of the frames.
type recoverDriver struct {
	*fakeDriver
	copy []byte // the second copy's frames
}

func (d *recoverDriver) Start(ctx context.Context, tmpl *sandbox.Spec, p engine.Plan) (engine.Box, error) {
	b, err := d.fakeDriver.Start(ctx, tmpl, p)
	if err != nil {
		return b, err
	}
	return &recoverBox{fakeBox: b.(*fakeBox), copy: d.copy}, nil
}

type recoverBox struct {
	*fakeBox
	copy   []byte
	killed atomic.Bool
}

var _ engine.Recoverer = (*recoverBox)(nil)

func (b *recoverBox) Frames() io.Reader { return strings.NewReader("") }

func (b *recoverBox) Kill(ctx context.Context) error {
	b.killed.Store(true)
	return b.fakeBox.Kill(ctx)
}

func (b *recoverBox) Recover(context.Context) (io.ReadCloser, error) {
	if b.copy == nil {
		return nil, errors.New("no copy")
	}
	return io.NopCloser(bytes.NewReader(b.copy)), nil
}

func frames(t *testing.T, stdout string, rep *frame.Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, frame.Write(&buf, frame.Stdout, []byte(stdout)))
	if rep != nil {
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		require.NoError(t, frame.Write(&buf, frame.Result, b))
	}
	return buf.Bytes()
}

// A run whose stream lost its report takes the Result from the box's
// second copy of the frames, without writing it to the live writers a
// second time; a copy without a report is no Result.
func TestRecovererGivesTheResultTheStreamLost(t *testing.T) {
	d := &recoverDriver{fakeDriver: &fakeDriver{}, copy: frames(t, "recovered\n", &frame.Report{OOMKills: new(int64)})}
	e := engine.New(d, engine.Config{Options: sandbox.DefaultOptions("test"), Identity: sandbox.IdentityFor(0, 0)})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	var live bytes.Buffer
	s := spec(t)
	s.Stdout = &live
	res, err := e.Run(context.Background(), s)
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.Equal(t, "recovered\n", res.Stdout)
	require.Empty(t, live.String(), "the live writers had their chance")

	d.copy = frames(t, "half", nil)
	res, err = e.Run(context.Background(), spec(t))
	require.ErrorIs(t, err, sandbox.ErrNoReport)
	require.False(t, res.Success)
	require.NoError(t, e.WaitIdle(context.Background()))
	require.Zero(t, d.alive())
}
