package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// serveFlags are serve's own flags.
type serveFlags struct {
	listen     string
	tokensFile string
	maxRunning int
	maxQueued  int
	queueWait  time.Duration
	workspaces string
	sessions   string
	warm       *warmFlags
	drain      time.Duration
	auditLog   string
	ociRuntime string
	replica    string
	peerURL    string
	replicas   string // how many: a number, or "" when not told
	// usageEveryMin is the Service's UsageEveryMin.
	usageEveryMin time.Duration
	state         string
}

func newServeCmd(g *globals, s streams) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--tokens FILE] [--max-running N] [--max-queued N] [--warm-pool N] [--sessions DIR] [--drain D] [--replica NAME --peer-url URL --replicas N]",
		Short: "Serve the HTTP API agent hosts call (JSON, NDJSON or SSE streams, Prometheus metrics)",
		Long: `serve runs sandboxrun as a long-lived server: the skills under --skills by name,
run, exec and python as HTTP endpoints (see /v1/openapi.json), a bounded
number of executions at once with a bounded queue (429 past it), warm
containers, metrics at /metrics, the MCP Streamable HTTP transport at /mcp, and
one log line per request on stderr.

--listen is host:port (default 127.0.0.1:8080) or unix:/path. Listening
anywhere but loopback or a unix socket needs --tokens FILE (one bearer token
per line, at least 16 characters); with tokens every endpoint but /healthz and
/readyz requires 'Authorization: Bearer TOKEN'.

Requests name skills by name, never by path. With --sessions DIR (or the
policy's sessions.root) callers create sessions (POST /v1/sessions), put
files in them, run scripts with the session's folder as a writable
/workspace, and fetch what the runs made; sessions survive a restart and are
removed when idle past their TTL. Without a session a run gets an empty
read-only /workspace. The operator policy (--policy) governs every
request. On SIGTERM or SIGINT the server stops accepting, lets running
executions finish for up to --drain, cancels the rest (their containers are
removed), removes its warm containers and exits 0. Containers and workspace
volumes left by a server that was killed are removed when the next one
starts, and every minute while it runs.

Warm pool (on by default): a configuration (skill, image, limits, workspace)
run lately keeps containers started ahead of its next runs, as many as its
recent rate of runs asks, within --warm-pool in all (default 4, or the
policy's docker.warm_pool.max). The first run of a configuration is cold, the
next ones are warm; one not run for --warm-idle keeps none. --warm-pool 0
turns it off. Each warm container still serves exactly one run.

Several replicas (a StatefulSet): --replica NAME names this server and
--peer-url the base URL of another, {replica} standing for its name and
{ordinal} for the number ending it (both, or neither). Session ids then name
the replica that made them; any replica accepts any request and forwards one
for another replica's session to it, streaming. An owner that cannot be
reached answers 503 with Retry-After. --replicas N, the size of the set
(replicas named NAME-0 … NAME-N-1), lets GET /v1/sessions list a token's
sessions on every replica; without it a list is this replica's, marked
partial. Warm pools, limits and admission are each replica's own. Skill
uploads (skill_uploads in the policy) then need skill_uploads.store on a
volume every replica shares: serve refuses the default store, beside each
replica's own sessions root, unless --replicas is 1.`,
		Example: `  sandboxrun serve --skills ./skills
  sandboxrun serve --listen 0.0.0.0:8080 --tokens /etc/sandboxrun/tokens --sessions /var/lib/sandboxrun/sessions
  sandboxrun serve --listen 0.0.0.0:8080 --tokens /etc/sandboxrun/tokens --sessions /var/lib/sandboxrun/sessions \
    --replica sandboxrun-0 --replicas 2 --peer-url 'http://{replica}.sandboxrun-headless.default.svc.cluster.local:8080'
  curl -s localhost:8080/v1/skills/hello/run -d '{"script": "scripts/echo.py", "args": {"x": 1}}'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), g, s, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address: host:port, or unix:/path/to.sock")
	fs.StringVar(&f.tokensFile, "tokens", "", "file of accepted bearer tokens, one per line (required off loopback)")
	fs.IntVar(&f.maxRunning, "max-running", sandboxrun.DefaultMaxConcurrent, "executions at once")
	fs.IntVar(&f.maxQueued, "max-queued", sandboxrun.DefaultMaxQueued, "requests waiting for an execution slot; past this the answer is 429 (0: no queue, a request finding every slot taken is turned away at once)")
	fs.DurationVar(&f.queueWait, "queue-wait", sandboxrun.DefaultQueueWait, "longest a request waits for a slot before a 429")
	fs.StringVar(&f.sessions, "sessions", "", "folder holding sessions and their files (default: the policy's sessions.root; neither: no sessions)")
	fs.StringVar(&f.workspaces, "workspaces", "", "replaced by --sessions")
	_ = fs.MarkHidden("workspaces")
	f.warm = addWarmFlags(fs)
	fs.DurationVar(&f.drain, "drain", 30*time.Second, "on SIGTERM, how long running executions may take to finish")
	fs.StringVar(&f.auditLog, "audit-log", os.Getenv("SANDBOXRUN_AUDIT_LOG"), "append one JSON line per request to this file (default $SANDBOXRUN_AUDIT_LOG)")
	fs.StringVar(&f.replica, "replica", os.Getenv("SANDBOXRUN_REPLICA"), "this server's name among several (a DNS label, e.g. the StatefulSet Pod's); session ids name it (default $SANDBOXRUN_REPLICA)")
	fs.StringVar(&f.peerURL, "peer-url", os.Getenv("SANDBOXRUN_PEER_URL"), "base URL of another replica, {replica} its name, {ordinal} the number ending it (default $SANDBOXRUN_PEER_URL)")
	fs.StringVar(&f.replicas, "replicas", os.Getenv("SANDBOXRUN_REPLICAS"), "how many replicas the set has, numbered from 0 (a StatefulSet's replicas): lists of sessions ask each (default $SANDBOXRUN_REPLICAS)")
	fs.DurationVar(&f.usageEveryMin, "usage-every-min", sandboxrun.DefaultUsageEveryMin, "shortest interval between a run's live usage samples a caller may ask (usage_every_ms); shorter asks are raised to it")
	fs.StringVar(&f.state, "state", os.Getenv("SANDBOXRUN_STATE"), "folder for the server's state: each token's usage, so quotas hold across a restart (default $SANDBOXRUN_STATE; none: kept in memory)")
	fs.StringVar(&f.ociRuntime, "oci-runtime", os.Getenv("SANDBOXRUN_OCI_RUNTIME"), "engine runtime for sandboxes, e.g. runsc (default $SANDBOXRUN_OCI_RUNTIME)")
	return cmd
}

func serve(ctx context.Context, g *globals, s streams, f *serveFlags) error {
	var tokens *server.Tokens
	if f.tokensFile != "" {
		var err error
		if tokens, err = server.LoadTokens(f.tokensFile); err != nil {
			return withCode(exitRefused, err)
		}
	}
	if f.maxRunning < 1 || f.maxQueued < 0 {
		return usageError("--max-running must be at least 1 and --max-queued at least 0")
	}
	if f.workspaces != "" {
		return usageError("--workspaces is replaced by sessions: start with --sessions DIR, and have callers create a session (POST /v1/sessions) and pass \"session\": ID")
	}
	replicas, err := f.replicaSet()
	if err != nil {
		return err
	}
	if err := sharedUploads(g.pol, replicas); err != nil {
		return err
	}
	warmMax, warmIdle, err := f.warm.resolve(g.pol)
	if err != nil {
		return err
	}
	roots, err := g.existingRoots()
	if err != nil {
		return err
	}
	usageState, err := f.usageState()
	if err != nil {
		return err
	}
	log, err := openAudit(f.auditLog)
	if err != nil {
		return err
	}
	// Request logs go to stderr at info level even without -v.
	logger := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: min(slog.LevelInfo, g.logLevel())}))
	metrics := server.NewMetrics()
	svc, err := sandboxrun.New(sandboxrun.Config{
		SkillRoots:    roots,
		Strict:        g.strict,
		Policy:        g.pol,
		OCIRuntime:    f.ociRuntime,
		Pip:           pipConfigFromEnv(os.Getenv),
		Audit:         log,
		Observer:      metrics,
		Logger:        logger,
		MaxConcurrent: f.maxRunning,
		MaxQueued:     queueSize(f.maxQueued),
		QueueWait:     f.queueWait,
		WarmPool:      warmMax,
		WarmIdle:      warmIdle,
		SessionsRoot:  f.sessions,
		Replica:       f.replica,
		UsageState:    usageState,
		Backend:       backends.New,
		Images:        backends.Images(),
		UsageEveryMin: f.usageEveryMin,
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	// Runs live on runCtx, not on the signal's context: a SIGTERM lets them
	// finish until the drain deadline, then cancels them.
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	srv, err := server.New(server.Options{
		Service: svc, Tokens: tokens, Logger: logger, Replicas: replicas,
		MCP: mcp.HTTPHandler(svc, mcp.WithBaseContext(runCtx), mcp.WithLogger(logger)),
	})
	if err != nil {
		return err
	}
	ln, err := server.Listen(f.listen, tokens)
	if err != nil {
		return withCode(exitRefused, err)
	}
	hs := server.HTTPServer(srv.Handler(), func(net.Listener) context.Context { return runCtx })
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	go func() {
		// Connecting at once removes what a killed predecessor left (its
		// sandboxes and their volumes) without waiting for a first run;
		// the Service reaps dead owners every minute from then on.
		if err := svc.Ready(runCtx); err != nil {
			logger.Warn("the engine is not ready at start; leftovers of a killed server are reaped once it is", "err", err)
		}
	}()
	logger.Info("serving", "listen", ln.Addr().String(), "skills", strings.Join(roots, ":"), "policy", g.pol.Source, "auth", !tokens.Empty(), "replica", f.replica)
	select {
	case err := <-errc:
		return withCode(exitEnv, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	logger.Info("draining", "deadline", f.drain.String())
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.drain)
	defer cancel()
	if err := hs.Shutdown(drainCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		logger.Warn("shutdown", "err", err)
	}
	// Past the deadline: cancel what still runs, and wait for its handlers
	// (their runners remove the containers) before closing the Service.
	cancelRuns()
	closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelClose()
	_ = hs.Shutdown(closeCtx)
	logger.Info("stopped")
	return nil
}

// replicaSet checks --replica and --peer-url (both or neither) and
// --replicas (only with them).
func (f *serveFlags) replicaSet() (*server.Replicas, error) {
	switch {
	case f.replica == "" && f.peerURL == "" && f.replicas != "":
		return nil, usageError("--replicas %s needs --replica and --peer-url (or SANDBOXRUN_REPLICA and SANDBOXRUN_PEER_URL)", f.replicas)
	case f.replica == "" && f.peerURL == "":
		return nil, nil
	case f.peerURL == "":
		return nil, usageError("--replica %s needs --peer-url (or SANDBOXRUN_PEER_URL): the base URL of another replica, e.g. http://{replica}.sandboxrun-headless.default.svc.cluster.local:8080", f.replica)
	case f.replica == "":
		return nil, usageError("--peer-url needs --replica (or SANDBOXRUN_REPLICA): this server's name among the replicas, e.g. sandboxrun-0")
	}
	r := &server.Replicas{Self: f.replica, PeerURL: f.peerURL}
	if f.replicas != "" {
		n, err := strconv.Atoi(f.replicas)
		if err != nil || n < 1 {
			return nil, usageError("--replicas %q: give the number of replicas, 1 or more (a StatefulSet's replicas)", f.replicas)
		}
		r.Count = n
	}
	if err := r.Validate(); err != nil {
		return nil, usageError("--replica/--peer-url/--replicas: %v", err)
	}
	return r, nil
}

// sharedUploads refuses skill uploads kept in the default store with
// several replicas (or a number not told): that store lies beside each
// replica's own sessions root, so an upload would exist on the replica
// that took it alone. A store the policy names is taken to be shared;
// docs/deploy.md says it must be.
func sharedUploads(pol *policy.Operator, r *server.Replicas) error {
	if r == nil || r.Count == 1 || !pol.SkillUploads.Enabled() || pol.SkillUploads.Store.Value != "" {
		return nil
	}
	many := "several replicas"
	if r.Count == 0 {
		many = "replicas (--replica) and no --replicas 1"
	}
	return usageError("skill uploads with %s need a store every replica shares: set skill_uploads.store in the policy to a folder on a volume all replicas mount read-write (ReadWriteMany: NFS, CephFS, EFS); the default store, beside each replica's sessions root, keeps an upload on the replica that took it (docs/deploy.md, \"Uploads on every replica\")", many)
}

// usageState is the usage state file under --state, the folder made when
// missing; "" without --state.
func (f *serveFlags) usageState() (string, error) {
	if f.state == "" {
		return "", nil
	}
	if err := os.MkdirAll(f.state, 0o700); err != nil {
		return "", withCode(exitEnv, fmt.Errorf("--state: %w", err))
	}
	return sandboxrun.UsageStatePath(f.state), nil
}

// queueSize is --max-queued as the Service's MaxQueued: 0 on the command
// line is no queue, where the Config's 0 is the default.
func queueSize(n int) int {
	if n == 0 {
		return sandboxrun.NoQueue
	}
	return n
}
