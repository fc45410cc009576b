package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// fakeInit is what a fake container does once started: it gets the job
// init would read and writes init's framed stdout and its stderr. killed is
// closed when the host kills the container.
type fakeInit func(job frame.Job, out, initErr io.Writer, killed <-chan struct{})

// fakeClient plays the engine for unit tests. Calls not overridden hit the
// nil embedded interface and panic, so an unexpected call fails the test.
type fakeClient struct {
	Client

	init        fakeInit
	ignoreStdin bool
	createErr   error
	createID    string // returned even with createErr, as a partial create
	attachErr   error
	startErr    error
	inspectErr  error
	removeErr   error
	// removeGate, when set, holds every removal until it is closed.
	removeGate chan struct{}
	// removeErrOnce fails the first removal only.
	removeErrOnce error
	// removeAway fails that many removals as an engine that cannot be
	// reached.
	removeAway int
	// waitBlocks makes ContainerWait wait until its context ends, as for
	// a container that does not stop.
	waitBlocks bool
	// startHook, when set, runs in every start with its number (from 1);
	// it may block, and an error fails that start.
	startHook func(n int) error
	starts    int
	state     container.State
	// info is what Info reports; zero fields get a roomy host.
	info system.Info

	mu         sync.Mutex
	calls      []string
	cfg        *container.Config
	runIDs     []string // run-id labels in create order
	removed    []string
	preludes   []frame.Prestart
	volumesRm  []string
	containers map[string]*fakeContainer
	n          int
}

type fakeContainer struct {
	side    *fakeConn // the container's end of the attach stream
	killed  chan struct{}
	once    sync.Once
	running bool
}

// Info reports a host of 64 CPUs and 1 TiB with runc, unless f.info says
// otherwise. It is not recorded in calls: it is asked once per Docker.
func (f *fakeClient) Info(context.Context) (system.Info, error) {
	info := f.info
	if info.NCPU == 0 {
		info.NCPU = 64
	}
	if info.MemTotal == 0 {
		info.MemTotal = 1 << 40
	}
	if info.Runtimes == nil {
		info.Runtimes = map[string]system.RuntimeWithStatus{"runc": {}}
	}
	return info, nil
}

func (f *fakeClient) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeClient) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeClient) Removed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.removed...)
}

// RunIDs are the run-id labels of the containers created, in order.
func (f *fakeClient) RunIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.runIDs...)
}

// Live counts containers created and not removed.
func (f *fakeClient) Live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.containers)
}

func (f *fakeClient) get(id string) *fakeContainer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.containers[id]
}

func (f *fakeClient) ContainerCreate(ctx context.Context, cfg *container.Config, _ *container.HostConfig,
	_ *network.NetworkingConfig, _ *ocispec.Platform, _ string) (container.CreateResponse, error) {
	f.record("create")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
	f.runIDs = append(f.runIDs, cfg.Labels[sandbox.LabelRunID])
	if err := ctx.Err(); err != nil {
		return container.CreateResponse{ID: f.createID}, err
	}
	id := f.createID
	if f.createErr == nil && id == "" {
		f.n++
		id = fmt.Sprintf("c0ffee%06d", f.n)
	}
	if id != "" {
		if f.containers == nil {
			f.containers = map[string]*fakeContainer{}
		}
		f.containers[id] = &fakeContainer{killed: make(chan struct{})}
	}
	return container.CreateResponse{ID: id}, f.createErr
}

func (f *fakeClient) ContainerAttach(_ context.Context, id string, _ container.AttachOptions) (types.HijackedResponse, error) {
	f.record("attach")
	if f.attachErr != nil {
		return types.HijackedResponse{}, f.attachErr
	}
	c := f.get(id)
	h2c, c2h := newPipe(), newPipe()
	host := &fakeConn{r: c2h.r, w: h2c.w}
	f.mu.Lock()
	c.side = &fakeConn{r: h2c.r, w: c2h.w}
	f.mu.Unlock()
	return types.HijackedResponse{Conn: host, Reader: bufio.NewReader(host)}, nil
}

func (f *fakeClient) ContainerStart(ctx context.Context, id string, _ container.StartOptions) error {
	f.record("start")
	if f.startErr != nil {
		return f.startErr
	}
	if f.startHook != nil {
		f.mu.Lock()
		f.starts++
		n := f.starts
		f.mu.Unlock()
		if err := f.startHook(n); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c := f.get(id)
	f.mu.Lock()
	c.running = true
	side := c.side
	f.mu.Unlock()
	go func() {
		defer side.Close()
		var job frame.Job
		if !f.ignoreStdin {
			var ok bool
			if job, ok = f.readStdin(side); !ok {
				return
			}
		}
		out := stdcopy.NewStdWriter(side, stdcopy.Stdout)
		errw := stdcopy.NewStdWriter(side, stdcopy.Stderr)
		if f.init != nil {
			f.init(job, out, errw, c.killed)
		}
	}()
	return nil
}

// readStdin reads what init would: an optional prelude, then the job, and
// then the end of stdin.
func (f *fakeClient) readStdin(r io.Reader) (frame.Job, bool) {
	dec := json.NewDecoder(r)
	var job frame.Job
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return job, false
		}
		var p frame.Prelude
		if json.Unmarshal(raw, &p) == nil && p.Prestart != nil {
			f.mu.Lock()
			f.preludes = append(f.preludes, *p.Prestart)
			f.mu.Unlock()
			continue
		}
		if json.Unmarshal(raw, &job) != nil {
			return job, false
		}
		_, err := io.Copy(io.Discard, r)
		return job, err == nil
	}
}

// Preludes are the prestarts warm containers were asked for.
func (f *fakeClient) Preludes() []frame.Prestart {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]frame.Prestart(nil), f.preludes...)
}

func (f *fakeClient) ContainerKill(_ context.Context, id string, _ string) error {
	f.record("kill")
	if c := f.get(id); c != nil {
		c.stop()
	}
	return nil
}

func (c *fakeContainer) stop() {
	c.once.Do(func() {
		close(c.killed)
		if c.side != nil {
			c.side.Close()
		}
	})
}

func (f *fakeClient) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	f.record("inspect")
	if f.inspectErr != nil {
		return container.InspectResponse{}, f.inspectErr
	}
	f.mu.Lock()
	st := f.state
	f.mu.Unlock()
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: id, Image: "sha256:feed", State: &st}}, nil
}

func (f *fakeClient) ContainerWait(ctx context.Context, _ string, _ container.WaitCondition) (<-chan container.WaitResponse, <-chan error) {
	f.record("wait")
	if f.waitBlocks {
		errC := make(chan error, 1)
		go func() { <-ctx.Done(); errC <- ctx.Err() }()
		return make(chan container.WaitResponse), errC
	}
	ch := make(chan container.WaitResponse, 1)
	ch <- container.WaitResponse{}
	f.mu.Lock()
	f.state.Running = false
	f.mu.Unlock()
	return ch, make(chan error)
}

// VolumeRemove records the volume; it is not in calls, which tests of the
// container sequence compare whole.
func (f *fakeClient) VolumeRemove(_ context.Context, name string, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.volumesRm = append(f.volumesRm, name)
	return nil
}

func (f *fakeClient) ContainerRemove(ctx context.Context, id string, opts container.RemoveOptions) error {
	f.record("remove")
	if f.removeGate != nil {
		<-f.removeGate
	}
	if ctx.Err() != nil {
		return ctx.Err() // removal must not run under a cancelled context
	}
	if !opts.Force || !opts.RemoveVolumes {
		return errors.New("remove without force or volumes")
	}
	f.mu.Lock()
	if f.removeAway > 0 {
		f.removeAway--
		f.mu.Unlock()
		return client.ErrorConnectionFailed("unix:///gone/docker.sock") //nolint:staticcheck // the only way to build the error the client returns for an unreachable daemon
	}
	if err := f.removeErrOnce; err != nil {
		f.removeErrOnce = nil
		f.mu.Unlock()
		return err
	}
	c := f.containers[id]
	delete(f.containers, id)
	f.removed = append(f.removed, id)
	f.mu.Unlock()
	if c != nil {
		c.stop()
	}
	return f.removeErr
}

// fakeConn is one end of a bidirectional in-memory stream that supports a
// half close, as the engine's hijacked connection does.
type fakeConn struct {
	r *io.PipeReader
	w *io.PipeWriter
}

type pipe struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func newPipe() pipe { r, w := io.Pipe(); return pipe{r, w} }

func (c *fakeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *fakeConn) CloseWrite() error           { return c.w.Close() }
func (c *fakeConn) Close() error {
	c.w.Close()
	return c.r.CloseWithError(net.ErrClosed)
}
func (c *fakeConn) LocalAddr() net.Addr              { return &net.UnixAddr{Name: "fake", Net: "unix"} }
func (c *fakeConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Name: "fake", Net: "unix"} }
func (c *fakeConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

// report writes init's result frame as the current init does, with the
// memory cgroup's OOM-kill count (0 unless r says otherwise).
func report(w io.Writer, r frame.Report) {
	if r.OOMKills == nil {
		var none int64
		r.OOMKills = &none
	}
	reportAsIs(w, r)
}

// reportAsIs writes r unchanged: without OOMKills it is the report of an
// init that predates the count.
func reportAsIs(w io.Writer, r frame.Report) {
	b, _ := json.Marshal(r)
	_ = frame.Write(w, frame.Result, b)
}

var (
	errNotFound = cerrdefs.ErrNotFound
	errTest     = errors.New("test failure")
)
