package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
)

// MaxMessageBytes bounds one incoming protocol message: room for the
// largest arguments policy accepts (policy.MaxArgsBytes) even when JSON
// string escaping doubles them, plus the envelope.
const MaxMessageBytes = 2*policy.MaxArgsBytes + 1<<20

// instructions tell a host (and its model) how the tools fit together;
// the middle part says what /workspace is on this server.
const (
	instructionsStart = "sandboxrun runs Agent Skills in isolated, ephemeral sandboxes. " +
		"Call list_skills to see the skills, activate_skill to read one's instructions, then run its scripts with run_skill_script, " +
		"the commands its instructions give with run_skill_command (checked against the skill's allowed-tools), or Python with run_python. "
	instructionsSession = "Every run gets a fresh sandbox, but /workspace (its working directory) is kept for this connection: " +
		"put input files there with write_file, and fetch what runs write there with list_files and read_file. "
	instructionsFolder = "Every run gets a fresh sandbox; /workspace (its working directory) is a folder the operator chose, shared by every call: " +
		"read it with list_files and read_file, put files there with write_file, and fetch what runs write there. "
	instructionsReadOnly = "Every run gets a fresh sandbox; /workspace (its working directory) is a folder the operator chose, read-only: " +
		"read it with list_files and read_file; write_file is refused (a run may write scratch files in /tmp). "
	instructionsEnd = "A skill's files are also resources: skill://NAME/SKILL.md and skill://NAME/PATH."
)

type options struct {
	log      *slog.Logger
	interval time.Duration
	base     context.Context // the server's lifetime, not a request's
	// workspace, when set, is the host folder the file tools and runs use
	// instead of a session per connection; writable lets write_file in.
	workspace string
	writable  bool
}

// Option changes how the server behaves.
type Option func(*options)

// WithLogger logs what the server does (never to stdout under stdio); the
// default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithProgressInterval sets how often a run reports progress to a client
// that asked for it (default 2s).
func WithProgressInterval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// WithBaseContext ties every run to ctx as well as to its request: when ctx
// ends (the server shuts down), runs in flight are cancelled and their
// sandboxes removed. The default is context.Background().
func WithBaseContext(ctx context.Context) Option { return func(o *options) { o.base = ctx } }

// WithWorkspace gives the file tools and every run the host folder dir
// (absolute and resolved, as policy.ResolveWorkspace returns it) instead
// of a session of each connection's own: for a local server an operator
// starts on a project (sandboxrun mcp --workspace). Every connection shares
// it. The file tools work on it with the sessions' guards (no path out of
// it, no symlink followed) and write to it only when writable, which the
// caller decides from the operator policy's workspace.write; runs mount it
// at /workspace, writable only when the skill's allowed-tools grant Write
// and the policy lets them, as for the CLI's run --workspace. The default
// is a session per connection, under the Service's sessions root.
func WithWorkspace(dir string, writable bool) Option {
	return func(o *options) { o.workspace, o.writable = dir, writable }
}

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler), interval: 2 * time.Second, base: context.Background()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.interval <= 0 {
		o.interval = 2 * time.Second
	}
	if o.base == nil {
		o.base = context.Background()
	}
	return o
}

// NewServer returns an MCP server whose tools and resources are calls on
// svc. Build svc with AllowSkillPaths false: the server's callers are models,
// which name skills, never host folders. One server serves any number of
// sessions, all with no token: operator skills only, workspaces of the
// owner "mcp".
func NewServer(svc *sandboxrun.Service, opts ...Option) *mcpsdk.Server {
	srv, _ := newServer(svc, newOptions(opts), sandboxrun.Caller{Owner: sessionOwner, Remote: true})
	return srv
}

// newServer is NewServer for connections acting for c; settle waits
// until the sessions of connections that ended are removed.
func newServer(svc *sandboxrun.Service, o options, c sandboxrun.Caller) (srv *mcpsdk.Server, settle func()) {
	door := svc.For(c)
	var ws files
	var where string
	settle = func() {}
	switch {
	case o.workspace == "":
		sessions := newWorkspaces(door)
		ws, where, settle = sessions, instructionsSession, sessions.settle
	case o.writable:
		ws, where = openFolder(o.base, door, o.workspace, true), instructionsFolder
	default:
		ws, where = openFolder(o.base, door, o.workspace, false), instructionsReadOnly
	}
	so := &mcpsdk.ServerOptions{Instructions: instructionsStart + where + instructionsEnd, Logger: o.log}
	// A server that is one of several (Config.Replica) names itself in
	// its Streamable HTTP session ids, as sandboxrun session ids do, so
	// that another replica receiving one forwards the request here.
	if replica := svc.Replica(); replica != "" {
		so.GetSessionID = func() string { return sandboxrun.NewSessionID(replica) }
	}
	srv = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "sandboxrun", Title: "sandboxrun", Version: sandboxrun.Version}, so)
	srv.AddReceivingMiddleware(traceCalls)
	h := &handlers{door: door, log: o.log, interval: o.interval, base: o.base, files: ws}
	tools := map[string]*mcpsdk.Tool{}
	for _, t := range Tools() {
		tools[t.Name] = t
	}
	mcpsdk.AddTool(srv, tools[ToolListSkills], h.listSkills)
	mcpsdk.AddTool(srv, tools[ToolActivateSkill], h.activateSkill)
	mcpsdk.AddTool(srv, tools[ToolRunScript], h.runScript)
	mcpsdk.AddTool(srv, tools[ToolRunCommand], h.runCommand)
	mcpsdk.AddTool(srv, tools[ToolRunPython], h.runPython)
	mcpsdk.AddTool(srv, tools[ToolExplain], h.explain)
	mcpsdk.AddTool(srv, tools[ToolWriteFile], h.writeFile)
	mcpsdk.AddTool(srv, tools[ToolReadFile], h.readFile)
	mcpsdk.AddTool(srv, tools[ToolListFiles], h.listFiles)
	mcpsdk.AddTool(srv, tools[ToolSnapshot], h.snapshotWorkspace)
	mcpsdk.AddTool(srv, tools[ToolRestore], h.restoreWorkspace)
	mcpsdk.AddTool(srv, tools[ToolSnapshots], h.listSnapshots)
	h.addResources(srv)
	return srv, settle
}

// ServeStdio serves one client over in and out (a host's pipes to the
// process) until the client disconnects or ctx ends. Either way, runs in
// flight are cancelled, and their sandboxes removed, before it returns.
func ServeStdio(ctx context.Context, svc *sandboxrun.Service, in io.Reader, out io.Writer, opts ...Option) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The SDK lets in-flight calls finish when the input ends; a host that
	// went away wants no answer, so its runs stop at once.
	w := &syncWriter{w: out}
	src := screen(in, w)
	defer src.Close()
	in = readerFunc(func(p []byte) (int, error) {
		n, err := src.Read(p)
		if err != nil {
			cancel()
		}
		return n, err
	})
	t := &mcpsdk.IOTransport{Reader: io.NopCloser(in), Writer: w, MaxLineLength: MaxMessageBytes + 1}
	srv, settle := newServer(svc, newOptions(append(opts, WithBaseContext(ctx))), sandboxrun.Caller{Owner: sessionOwner, Remote: true})
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	// The caller closes svc once this returns: the connection's session
	// is removed first.
	defer settle()
	var waitErr error
	ended := make(chan struct{})
	go func() {
		waitErr = ss.Wait()
		close(ended)
	}()
	select {
	case <-ctx.Done():
		// Asked to stop, or the client went away: a normal end. Close
		// waits for the (cancelled) calls in flight to return.
		_ = ss.Close()
		<-ended
		return nil
	case <-ended:
		if errors.Is(waitErr, io.EOF) {
			return nil
		}
		return waitErr
	}
}

// HTTPHandler serves the tools and resources over the Streamable HTTP
// transport, for mounting at /mcp behind the server's authentication. A
// client that cancels a call, or (protocol 2026-07-28 and later) drops its
// request, cancels the run; pass WithBaseContext with the server's lifetime
// so that a shutdown cancels the runs in flight too. Idle sessions end after
// 30 minutes; requests reaching a loopback address with another Host header
// are refused (the SDK's DNS-rebinding protection).
//
// Behind the server's tokens, a connection acts for the owner of the token
// that opened it (see byOwner); with no token it acts as NewServer's.
func HTTPHandler(svc *sandboxrun.Service, opts ...Option) http.Handler {
	b := &byOwner{svc: svc, o: newOptions(opts), servers: map[string]*mcpsdk.Server{}}
	return b.guard(mcpsdk.NewStreamableHTTPHandler(b.server, &mcpsdk.StreamableHTTPOptions{
		Logger:                       b.o.log,
		SessionTimeout:               30 * time.Minute,
		MaxRequestBodyBytes:          MaxMessageBytes,
		PropagateRequestCancellation: true,
	}))
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
