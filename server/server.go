package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/caller"
)

// Options configure a Server. Service is required; the rest have defaults.
type Options struct {
	Service *sandboxrun.Service
	// Tokens, when set, are required on every endpoint but /healthz and
	// /readyz.
	Tokens *Tokens
	// BodyTimeout bounds reading a JSON body (default BodyReadTimeout);
	// past it, 408.
	BodyTimeout time.Duration
	// MCP, when set, is mounted at /mcp behind the same tokens.
	MCP http.Handler
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// Replicas, when set, make this server one of several: requests for
	// another replica's session are forwarded to it (see Replicas). Its
	// Self is the Service's (Config.Replica) when empty, and must agree.
	Replicas *Replicas
}

// Server is the HTTP front end. Create it with New; serve Handler(). When
// the Service's Observer is a *Metrics (NewMetrics), they are served at
// /metrics: one value, told every outcome by the Service. Runs
// are admitted by the Service (Config.MaxConcurrent, MaxQueued, QueueWait):
// one that finds the queue full is answered 429 with Retry-After.
type Server struct {
	o       Options
	metrics *Metrics // nil: no /metrics
	log     *slog.Logger
	mux     *http.ServeMux
	fwd     *forwarder // nil: a single server
}

// New checks the options and builds the routes.
func New(o Options) (*Server, error) {
	if o.Service == nil {
		return nil, errors.New("server: no Service")
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = BodyReadTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	metrics, _ := o.Service.Observer().(*Metrics)
	s := &Server{o: o, metrics: metrics, log: log, mux: http.NewServeMux()}
	if o.Replicas != nil {
		r := *o.Replicas
		switch self := o.Service.Replica(); {
		case r.Self == "":
			r.Self = self
		case r.Self != self:
			return nil, fmt.Errorf("server: replica %q, but the Service's is %q: give both the same name (sandboxrun.Config.Replica)", r.Self, self)
		}
		var err error
		if s.fwd, err = newForwarder(r, metrics, log); err != nil {
			return nil, err
		}
	}
	o.Service.KnowTenants(o.Tokens.owners())
	if metrics != nil {
		metrics.watchLoad(o.Service.Load)
		metrics.watchPool(o.Service.PoolStats)
		metrics.watchStored(o.Service.StoredByTenant)
	}
	s.routes()
	return s, nil
}

// Handler is the server's whole HTTP surface.
func (s *Server) Handler() http.Handler {
	return s.traced(s.logRequests(s.boundBodies(s.guardPaths(s.mux))))
}

func (s *Server) routes() {
	auth := func(h http.Handler) http.Handler { return s.o.Tokens.requireToken(s.routed(h)) }
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.ready)
	s.mux.Handle("GET /v1/openapi.json", auth(http.HandlerFunc(serveOpenAPI)))
	s.mux.Handle("GET /v1/skills", auth(http.HandlerFunc(s.listSkills)))
	s.mux.Handle("GET /v1/skills/{name}", auth(http.HandlerFunc(s.activate)))
	s.mux.Handle("POST /v1/skills/{name}/run", auth(s.execute("script", func(b execBody) sandboxrun.Action {
		return sandboxrun.Action{Script: b.Script}
	})))
	s.mux.Handle("POST /v1/skills/{name}/exec", auth(s.execute("command", func(b execBody) sandboxrun.Action {
		return sandboxrun.Action{Command: b.Command}
	})))
	s.mux.Handle("POST /v1/skills/{name}/python", auth(s.execute("code", func(b execBody) sandboxrun.Action {
		return sandboxrun.Action{Code: []byte(b.Code), Python: true}
	})))
	s.mux.Handle("POST /v1/skills/{name}/explain", auth(http.HandlerFunc(s.explain)))
	s.mux.Handle("GET /v1/usage", auth(http.HandlerFunc(s.usage)))
	s.sessionRoutes(auth)
	s.uploadRoutes(auth)
	if s.metrics != nil {
		s.mux.Handle("GET /metrics", auth(s.metrics.handler()))
	}
	if s.o.MCP != nil {
		s.mux.Handle("/mcp", auth(s.o.MCP))
	}
}

var errNotReady = errors.New("not ready: the sandbox backend is unreachable or the runner image is missing; the server's log says which")

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.o.Service.Ready(ctx); err != nil {
		// /readyz answers without a token: the cause (which may name the
		// engine socket, a kubeconfig or the policy file) goes to the log.
		s.log.Warn("not ready", "err", err)
		writeError(w, http.StatusServiceUnavailable, errNotReady)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// door is the Service as the request's caller reaches it: the owner of its
// token, remote, so every answer names the sandbox's folders only. On a
// replica its sessions elsewhere are asked of the peers (routed) when a
// stored_bytes check or its usage needs them.
func (s *Server) door(r *http.Request) *sandboxrun.Door {
	return s.o.Service.For(sandboxrun.Caller{Owner: owner(r), Label: caller.Label(r.Context()), Remote: true,
		OtherReplicas: caller.OtherReplicas(r.Context())})
}

func (s *Server) activate(w http.ResponseWriter, r *http.Request) {
	a, err := s.door(r).Activate(r.PathValue("name"))
	if err != nil {
		writeJSON(w, statusOf(nil, err), newErrorBody(nil, err))
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// action is what a run endpoint's body asks to run.
type action func(b execBody) sandboxrun.Action

// execute serves one run endpoint: decode, run through the Service (which
// admits the run or turns it away: 429), answer in one JSON document or as
// a stream. The request's
// context is the run's: a client that disconnects cancels the run, and the
// runner removes its container.
func (s *Server) execute(need string, act action) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := decodeBody(w, r, need)
		if err != nil {
			finish(w, nil, nil, err)
			return
		}
		req, err := b.request()
		if err != nil {
			finish(w, nil, nil, err)
			return
		}
		var st *streamer
		media := streamFormat(r)
		if media != "" {
			st = newStreamer(w, media)
			req.Stdout, req.Stderr = chunks{st, "stdout"}, chunks{st, "stderr"}
			req.Usage = st.usage
		}
		req.UsageEvery = b.usageEvery(media != "")
		res, err := s.door(r).Execute(r.Context(), r.PathValue("name"), act(b), req).Answer()
		if res != nil {
			annotate(r, "run_id", res.ID, "exit_code", res.ExitCode)
		}
		finish(w, st, res, err)
	})
}
