package server

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// traced wraps h so every request is a span (a child of the caller's, when
// its traceparent header names one), with the OTel HTTP semantic
// conventions' attributes, named by its route once the mux knows it. With
// tracing off the global provider is the no-op one and the wrapper does
// next to nothing.
func (s *Server) traced(h http.Handler) http.Handler {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sp := trace.SpanFromContext(r.Context()); sp.IsRecording() {
			// The route, not the path: a skill's name is not part of it.
			if _, pattern := s.mux.Handler(r); pattern != "" {
				sp.SetName(pattern)
				_, route, _ := strings.Cut(pattern, " ")
				// otelhttp records url.path, which names skills, sessions
				// and files: the route replaces it.
				sp.SetAttributes(attribute.String("http.route", route), attribute.String("url.path", route))
			} else {
				sp.SetAttributes(attribute.String("url.path", "unmatched"))
			}
		}
		h.ServeHTTP(w, r)
	})
	return otelhttp.NewHandler(named, "sandboxrun.http",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}
