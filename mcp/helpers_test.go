package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// exampleSkills is the repository's skills/ folder, seen from this package.
const exampleSkills = "../skills"

// fakeEngine stands in for Docker behind the Service: it records every Spec
// it is asked to run and answers with run, or with a successful Result.
type fakeEngine struct {
	mu    sync.Mutex
	specs []sandbox.Spec
	run   func(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error)
}

func (f *fakeEngine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	run := f.run
	f.mu.Unlock()
	if run != nil {
		return run(ctx, spec)
	}
	return result(spec, 0, `{"ok": true}`, ""), nil
}

func (f *fakeEngine) CheckImage(context.Context, string) (string, error) { return "sha256:fake", nil }
func (f *fakeEngine) Ping(context.Context) error                         { return nil }
func (f *fakeEngine) Close() error                                       { return nil }

func (f *fakeEngine) ran() []sandbox.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sandbox.Spec(nil), f.specs...)
}

// result is what the real runner reports for a finished process.
func result(spec sandbox.Spec, code int, stdout, stderr string) *sandbox.Result {
	res := &sandbox.Result{
		ID: "run-1", Skill: spec.Skill, Command: spec.Argv, Started: true,
		ExitCode: code, Success: code == 0, Stdout: stdout, Stderr: stderr,
		StdoutBytes: int64(len(stdout)), StderrBytes: int64(len(stderr)),
		Limits: spec.Limits, DurationMS: 12,
	}
	if json.Valid([]byte(stdout)) {
		res.Output = json.RawMessage(stdout)
	}
	if code != 0 {
		res.Error = "exit status 1"
	}
	return res
}

// service builds a Service for remote callers over eng.
func service(t *testing.T, eng *fakeEngine, roots ...string) *sandboxrun.Service {
	t.Helper()
	if len(roots) == 0 {
		roots = []string{exampleSkills}
	}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: roots, Runner: eng})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	return svc
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	got  []*mcpsdk.ProgressNotificationParams
	seen chan struct{}
}

func newProgressLog() *progressLog { return &progressLog{seen: make(chan struct{}, 1000)} }

func (p *progressLog) handle(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.got = append(p.got, req.Params)
	p.mu.Unlock()
	p.seen <- struct{}{}
}

func (p *progressLog) all() []*mcpsdk.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcpsdk.ProgressNotificationParams(nil), p.got...)
}

// connect runs srv on one end of an in-memory pipe and returns a client
// session on the other.
func connect(t *testing.T, srv *mcpsdk.Server, progress *progressLog) *mcpsdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := newClient(progress).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

func newClient(progress *progressLog) *mcpsdk.Client {
	opts := &mcpsdk.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = progress.handle
	}
	return mcpsdk.NewClient(&mcpsdk.Implementation{Name: "sandboxrun-test", Version: "v0"}, opts)
}

// session is a client connected in memory to a server over svc.
func session(t *testing.T, svc *sandboxrun.Service, opts ...mcp.Option) *mcpsdk.ClientSession {
	t.Helper()
	return connect(t, mcp.NewServer(svc, opts...), nil)
}

// structured decodes a result's structured content into v.
func structured(t *testing.T, res *mcpsdk.CallToolResult, v any) {
	t.Helper()
	require.NotNil(t, res.StructuredContent, "no structured content; text: %s", mcptest.Text(res))
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}
