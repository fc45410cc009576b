package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/fresh"
)

// ForwardedHeader marks a request one replica forwarded to another, with
// the forwarding replica's name. A replica never forwards a request that
// carries it: a session it does not own is then answered 421. A caller who
// sets it gains nothing: every replica checks the token itself.
const ForwardedHeader = "X-Sandboxrun-Forwarded-By"

// mcpSessionHeader names an MCP Streamable HTTP session.
const mcpSessionHeader = "Mcp-Session-Id"

// ConnectTimeout bounds how long a replica tries to connect to an owner
// before answering 503.
const ConnectTimeout = 5 * time.Second

// retryAfter is the Retry-After of a 503 for an unreachable owner, in
// seconds: about what a restarted Pod takes to be back.
const retryAfter = "5"

// Outcomes of a forward, as the metric counts them.
const (
	fwdAnswered    = "answered"    // the owner answered (any status)
	fwdUnreachable = "unreachable" // no connection to the owner: 503
	fwdFailed      = "failed"      // connected, but no answer: 502
	fwdCanceled    = "canceled"    // the caller went away first
	fwdMisdirected = "misdirected" // a forwarded request for another replica: 421
)

var (
	errOwnerUnreachable = errors.New("the replica that owns this session is unreachable")
	errOwnerFailed      = errors.New("the replica that owns this session did not answer")
	errMisdirected      = errors.New("misdirected request")
)

// forwarder sends requests for other replicas' sessions to their owners.
type forwarder struct {
	c        Replicas
	proxy    *httputil.ReverseProxy
	peers    *http.Client                 // asks peers for lists (GET /v1/sessions) and usage
	stored   fresh.Figures[string, int64] // the peers' session bytes, by owner, for peerStoredTTL
	lastSaid sync.Map                     // peerKey -> int64: each peer's last answer, for when it is silent
	log      *slog.Logger
	count    *prometheus.CounterVec
}

type targetKey struct{}

// target is where a forwarded request goes, and for whom.
type target struct {
	owner string
	url   *url.URL
}

func newForwarder(c Replicas, m *Metrics, log *slog.Logger) (*forwarder, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rt := c.Transport
	if rt == nil {
		rt = &http.Transport{
			// Peers are reached directly, never through an operator's
			// HTTP(S)_PROXY meant for other traffic.
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: ConnectTimeout,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	f := &forwarder{c: c, log: log, stored: fresh.Figures[string, int64]{TTL: peerStoredTTL}, count: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandboxrun_forwarded_requests_total",
		Help: "Requests for another replica's session, by outcome (answered, unreachable, failed, canceled; misdirected counts forwarded requests refused here).",
	}, []string{"outcome"})}
	for _, o := range []string{fwdAnswered, fwdUnreachable, fwdFailed, fwdCanceled, fwdMisdirected} {
		f.count.WithLabelValues(o)
	}
	if m != nil {
		m.reg.MustRegister(f.count)
	}
	f.peers = &http.Client{Transport: otelhttp.NewTransport(rt), Timeout: listTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(targetKey{}).(target)
			pr.SetURL(t.url)
			pr.Out.Header.Set(ForwardedHeader, c.Self)
		},
		Transport: otelhttp.NewTransport(rt),
		// Every write goes out at once: streamed runs stay streamed, and
		// MCP's event streams are never held back.
		FlushInterval:  -1,
		ModifyResponse: f.answered,
		ErrorHandler:   f.failed,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return f, nil
}

// routed wraps an authenticated route: a request naming another replica's
// session goes to that replica, the rest to h. It runs after the token
// check, so nothing unauthenticated is ever forwarded.
func (s *Server) routed(h http.Handler) http.Handler {
	if s.fwd == nil {
		return h
	}
	f := s.fwd
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from := r.Header.Get(ForwardedHeader)
		if from != "" {
			if sandboxrun.ValidReplica(from) != nil {
				from = "(not a replica name)" // the caller's text stays out of logs and answers
			}
			annotate(r, "forwarded_by", from)
		}
		id := sessionOf(r)
		how, owner := f.c.decide(id, from != "")
		switch how {
		case serveHere:
			h.ServeHTTP(w, f.withPeers(r))
			return
		case misdirected:
			f.count.WithLabelValues(fwdMisdirected).Inc()
			annotate(r, "owner", owner, "replica", f.c.Self)
			writeError(w, http.StatusMisdirectedRequest, fmt.Errorf("%w: the session belongs to replica %q, and replica %q forwarded this request to %q: check --peer-url on %q",
				errMisdirected, owner, from, f.c.Self, from))
			return
		}
		u, err := f.c.peer(owner)
		if err != nil {
			f.unreachable(w, r, owner, err)
			return
		}
		annotate(r, "owner", owner, "replica", f.c.Self)
		r = r.WithContext(context.WithValue(r.Context(), targetKey{}, target{owner: owner, url: u}))
		if r.Method == http.MethodPut {
			// An upload that stalls is cut off here as the owner cuts it
			// off, rather than holding this replica's connection after the
			// owner let go.
			r.Body = readCloser{guardStalls(w, r), r.Body}
		}
		f.proxy.ServeHTTP(w, r)
	})
}

// sessionOf is the session a request names: the {id} of a session route,
// the "session" of a run's JSON body or the "from" session of a fork (read,
// within the body limit, and put back for whoever serves the request), or
// an MCP session's header. A fork is made by the replica that holds its
// source, and the new session is that replica's.
func sessionOf(r *http.Request) string {
	switch {
	case strings.Contains(r.Pattern, "/v1/sessions/{id}"):
		return r.PathValue("id")
	case strings.HasPrefix(r.Pattern, "POST /v1/skills/"):
		return peekBody(r, maxBodyBytes, func(dec *json.Decoder) string {
			var b execBody
			if dec.Decode(&b) != nil {
				return ""
			}
			return b.Session
		})
	case r.Pattern == "POST /v1/sessions":
		return peekBody(r, maxSessionBody, func(dec *json.Decoder) string {
			var b createSessionBody
			if dec.Decode(&b) != nil || b.From == nil {
				return ""
			}
			return b.From.Session
		})
	case strings.HasSuffix(r.Pattern, "/mcp"):
		return r.Header.Get(mcpSessionHeader)
	}
	return ""
}

// peekBody reads a body of at most limit bytes and finds its session with
// find, decoding exactly as the endpoint will (same type, same decoder
// settings), then puts the body back. A body over the limit, unreadable,
// or not the endpoint's JSON names no session: it is served here, and
// refused here as it would be.
func peekBody(r *http.Request, limit int, find func(*json.Decoder) string) string {
	raw, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil || len(raw) > limit {
		r.Body = readCloser{io.MultiReader(bytes.NewReader(raw), r.Body), r.Body}
		return ""
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.ContentLength, r.TransferEncoding = int64(len(raw)), nil
	r.Header.Set("Content-Length", strconv.Itoa(len(raw)))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return find(dec)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// answered passes the owner's answer through. The caller keeps the entry's
// request id; the owner's goes to the entry's log line.
func (f *forwarder) answered(resp *http.Response) error {
	annotate(resp.Request, "owner_request_id", resp.Header.Get("X-Request-Id"), "owner_status", resp.StatusCode)
	resp.Header.Del("X-Request-Id")
	f.count.WithLabelValues(fwdAnswered).Inc()
	return nil
}

// failed answers a forward that got no answer: 503 with Retry-After when
// the owner could not be reached (it is down or restarting: its sessions
// are not lost, and no other replica may answer for them), 502 when it was
// reached and then failed to answer, nothing when the caller left.
func (f *forwarder) failed(w http.ResponseWriter, r *http.Request, err error) {
	t, _ := r.Context().Value(targetKey{}).(target)
	switch {
	case r.Context().Err() != nil:
		f.count.WithLabelValues(fwdCanceled).Inc()
		annotate(r, "forward", fwdCanceled)
	case unreachable(err):
		f.unreachable(w, r, t.owner, err)
	case errors.Is(err, errSlowBody):
		// The caller's upload stalled, as the owner would have answered it.
		f.count.WithLabelValues(fwdCanceled).Inc()
		annotate(r, "forward", fwdCanceled)
		writeError(w, http.StatusRequestTimeout, err)
	default:
		f.count.WithLabelValues(fwdFailed).Inc()
		annotate(r, "forward", fwdFailed)
		f.log.Warn("forwarded request failed", "owner", t.owner, "replica", f.c.Self, "err", err)
		writeError(w, http.StatusBadGateway, fmt.Errorf("%w: replica %q failed while answering; the request may or may not have taken effect: check before repeating it",
			errOwnerFailed, t.owner))
	}
}

func (f *forwarder) unreachable(w http.ResponseWriter, r *http.Request, owner string, err error) {
	f.count.WithLabelValues(fwdUnreachable).Inc()
	annotate(r, "forward", fwdUnreachable)
	// The cause names internal addresses: the log has it, the caller not.
	f.log.Warn("session owner unreachable", "owner", owner, "replica", f.c.Self, "err", err)
	w.Header().Set("Retry-After", retryAfter)
	writeError(w, http.StatusServiceUnavailable, fmt.Errorf("%w: replica %q holds it and is down or restarting; its sessions are kept: retry in a few seconds",
		errOwnerUnreachable, owner))
}

// unreachable reports whether a forward failed before the owner could have
// seen the request: no address, no connection.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var bad *url.Error
	return (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) ||
		(errors.As(err, &bad) && bad.Op == "parse")
}
