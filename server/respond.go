package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"syscall"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// errorBody is every error response. A policy denial of a command also says
// which part was denied and which allowed-tools entry would allow it.
type errorBody struct {
	Error   string          `json:"error"`
	Part    string          `json:"part,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Suggest string          `json:"suggest,omitempty"`
	Result  *sandbox.Result `json:"result,omitempty"`
	// Explanation is what an explain request had decided before it was
	// refused.
	Explanation *sandboxrun.Explanation `json:"explanation,omitempty"`
}

// statusOf maps what the Service returned to an HTTP status.
func statusOf(res *sandbox.Result, err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case isSessionError(err):
		return sessionStatus(err)
	case errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errSlowBody):
		return http.StatusRequestTimeout
	// Arguments that cannot be an argv (a NUL byte, over the bounds) are a
	// malformed request rather than a policy decision, though the Service
	// refuses (and audits) them like one.
	case errors.Is(err, errBadRequest), errors.Is(err, policy.ErrBadArgv):
		return http.StatusBadRequest
	case errors.Is(err, skill.ErrSkillNotFound):
		return http.StatusNotFound
	// An uploaded skill's image its own declaration cannot be built from
	// is the skill's problem; a token's builds at their bound, its to wait.
	case errors.Is(err, sandboxrun.ErrUploadBuild):
		return http.StatusUnprocessableEntity
	case errors.Is(err, sandboxrun.ErrUploadBuildsBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, sandboxrun.ErrRefused), errors.Is(err, sandbox.ErrInvalidSpec):
		return http.StatusForbidden
	case errors.Is(err, sandboxrun.ErrBusy), errors.Is(err, sandboxrun.ErrQuota):
		return http.StatusTooManyRequests
	case errors.Is(err, sandboxrun.ErrNoTenant):
		return http.StatusNotFound
	// The engine going away mid-run is the engine's state, not the
	// server's fault: 503, with the run's Result in the body.
	case errors.Is(err, sandbox.ErrUnavailable):
		return http.StatusServiceUnavailable
	// A backend that cannot prove a run without network is isolated
	// refuses such runs until its operator changes the setup: the
	// service cannot serve this request, and the caller cannot fix it.
	case errors.Is(err, sandbox.ErrNotIsolated):
		return http.StatusServiceUnavailable
	case diskFull(err):
		return http.StatusInsufficientStorage
	case res != nil && res.Started:
		return http.StatusInternalServerError // the sandbox failed mid-run
	case errors.Is(err, sandbox.ErrImageNotFound),
		errors.Is(err, images.ErrNotFound), errors.Is(err, sandboxrun.ErrNeedsBuild):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

func newErrorBody(res *sandbox.Result, err error) errorBody {
	switch {
	case errors.Is(err, sandbox.ErrUnavailable):
		err = engineAway(err)
	case diskFull(err):
		err = errDiskFull
	}
	b := errorBody{Error: err.Error()}
	var denied *policy.DeniedError
	if errors.As(err, &denied) {
		b.Part, b.Reason, b.Suggest = denied.Part, denied.Reason, denied.Suggest
	}
	if res != nil && res.Started {
		if res.Error == "" || errors.Is(err, sandbox.ErrUnavailable) || errors.Is(err, errDiskFull) {
			res.Error = err.Error()
		}
		b.Result = res
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client may be gone; nothing to tell it then
}

func writeError(w http.ResponseWriter, status int, err error) {
	if errors.Is(err, sandbox.ErrUnavailable) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", retryEngine)
	}
	writeJSON(w, status, newErrorBody(nil, err))
}

// Stream formats a run endpoint can answer in, chosen by Accept.
const (
	mediaNDJSON = "application/x-ndjson"
	mediaSSE    = "text/event-stream"
)

// streamFormat returns the stream media type the client accepts, or "" for
// a single JSON answer.
func streamFormat(r *http.Request) string {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (mt == mediaNDJSON || mt == mediaSSE) {
			return mt
		}
	}
	return ""
}

// event is one item of a stream: chunks of output and samples of the
// sandbox's resource use as they come, then the Result (or the error)
// last.
type event struct {
	Type   string          `json:"type"` // stdout, stderr, usage, result, error
	Data   string          `json:"data,omitempty"`
	Usage  *sandbox.Usage  `json:"usage,omitempty"`
	Result *sandbox.Result `json:"result,omitempty"`
	Error  *errorBody      `json:"error,omitempty"`
}

// streamer writes events as they come. Its status line goes out with the
// first event, so a request refused before any output still gets its
// proper status and a plain error body.
type streamer struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	media   string
	started bool
	failed  bool
}

func newStreamer(w http.ResponseWriter, media string) *streamer {
	return &streamer{w: w, rc: http.NewResponseController(w), media: media}
}

func (s *streamer) send(ev event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return
	}
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", s.media)
		s.w.Header().Set("Cache-Control", "no-store")
		s.w.WriteHeader(http.StatusOK)
	}
	line, err := json.Marshal(ev)
	if err != nil {
		s.failed = true
		return
	}
	if s.media == mediaSSE {
		_, err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", ev.Type, line)
	} else {
		_, err = fmt.Fprintf(s.w, "%s\n", line)
	}
	if err == nil {
		err = s.rc.Flush()
	}
	// A client that went away stops the writes; its context cancels the run.
	s.failed = err != nil
}

// chunks is the io.Writer a stream's stdout or stderr goes through.
type chunks struct {
	s    *streamer
	kind string
}

func (c chunks) Write(p []byte) (int, error) {
	c.s.send(event{Type: c.kind, Data: string(p)})
	return len(p), nil
}

// usage sends one sample of the run's resource use.
func (s *streamer) usage(u sandbox.Usage) { s.send(event{Type: "usage", Usage: &u}) }

// finish ends a run endpoint's answer: the Result, or the error with its
// status (in the stream when one began).
func finish(w http.ResponseWriter, st *streamer, res *sandbox.Result, err error) {
	if errors.Is(err, context.Canceled) && (res == nil || !res.Started) {
		return // the client is gone
	}
	status := statusOf(res, err)
	if st != nil {
		st.mu.Lock()
		begun := st.started
		st.mu.Unlock()
		if begun || status == http.StatusOK {
			if err == nil {
				st.send(event{Type: "result", Result: res})
			} else {
				eb := newErrorBody(res, err)
				st.send(event{Type: "error", Error: &eb})
			}
			return
		}
	}
	if err != nil {
		switch status {
		case http.StatusTooManyRequests:
			if ra := retryAfterOf(err); ra != "" {
				w.Header().Set("Retry-After", ra)
			}
		case http.StatusServiceUnavailable:
			if errors.Is(err, sandbox.ErrUnavailable) {
				w.Header().Set("Retry-After", retryEngine)
			}
		}
		writeJSON(w, status, newErrorBody(res, err))
		return
	}
	writeJSON(w, status, res)
}

// retryEngine is the Retry-After of a 503 for an engine away: long enough for an engine that
// restarts to answer again, short enough for a caller to barely notice.
const retryEngine = "5"

// engineAway is what a caller is told of an unreachable engine: the
// backend's own words ("docker daemon unreachable"), never the error's
// cause, which names the host's socket or kubeconfig (the server's log
// has it).
func engineAway(err error) error {
	var already engineAwayError
	if errors.As(err, &already) {
		return already
	}
	which := sandbox.ErrUnavailable.Error()
	for e := err; e != nil; {
		if is, ok := e.(interface{ Is(error) bool }); ok && is.Is(sandbox.ErrUnavailable) { //nolint:errorlint // as above
			which = e.Error()
			break
		}
		switch u := e.(type) { //nolint:errorlint // walking the chain by hand is the point: errors.As finds no backend's own sentinel
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			e = nextMatching(u.Unwrap())
		default:
			e = nil
		}
	}
	return engineAwayError{which}
}

// engineAwayError matches sandbox.ErrUnavailable.
type engineAwayError struct{ which string }

func (e engineAwayError) Error() string {
	return "the sandbox engine cannot be reached (" + e.which + "); retry after a few seconds, and tell the operator if it lasts (the server's log has the cause)"
}

func (engineAwayError) Is(target error) bool { return target == sandbox.ErrUnavailable }

// nextMatching is the first of errs that leads to sandbox.ErrUnavailable.
func nextMatching(errs []error) error {
	for _, e := range errs {
		if errors.Is(e, sandbox.ErrUnavailable) {
			return e
		}
	}
	return nil
}

// errDiskFull is what a caller is told when the server's file system is
// out of space (507): nothing of the failed write is kept, and the cause
// (a host path) stays in the server's log.
var errDiskFull = errors.New("the server's disk is full: no space left for session files; nothing of this request was kept. Delete files you no longer need, or ask the operator to free space, then retry")

// diskFull reports whether err comes from a file system out of space or
// out of its disk quota.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, errDiskFull)
}
