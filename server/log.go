package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
)

// requestLog collects attributes a handler adds to its request's log line.
type requestLog struct {
	mu    sync.Mutex
	attrs []any
}

type logKey struct{}

// annotate adds key-value pairs to the request's log line.
func annotate(r *http.Request, kv ...any) {
	if l, ok := r.Context().Value(logKey{}).(*requestLog); ok {
		l.mu.Lock()
		l.attrs = append(l.attrs, kv...)
		l.mu.Unlock()
	}
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests gives every request an id (X-Request-Id) and one structured
// log line, and counts it in the metrics by route pattern.
func (s *Server) logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := uuid.NewString()
		w.Header().Set("X-Request-Id", id)
		l := &requestLog{}
		r = r.WithContext(context.WithValue(r.Context(), logKey{}, l))
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		_, pattern := s.mux.Handler(r)
		if s.metrics != nil {
			s.metrics.http.WithLabelValues(pattern, strconv.Itoa(rec.status)).Inc()
		}
		l.mu.Lock()
		attrs := append([]any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", time.Since(start).Milliseconds()}, l.attrs...)
		l.mu.Unlock()
		s.log.InfoContext(r.Context(), "request", attrs...)
	})
}
