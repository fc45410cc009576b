package server

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/sandboxrun/sandboxrun"
)

// guardPaths stands in front of the router and refuses a request whose
// path is not already clean, for every route and method. ServeMux answers
// such a path ("/v1/sessions/S/snapshots/..") with a redirect to its
// cleaned form ("/v1/sessions/S"), and a client that follows a redirect
// with the same method (curl -L -X DELETE) would then act on the parent.
// So an id or a name is never '.', '..', empty (a double or trailing '/')
// or a percent-encoded '.', '/', '\' or NUL, and a path the router would
// still redirect (to the same path with a '/' added) is 404: this server
// answers no redirect at all. A session's file path keeps its own rules
// (Service.CheckFilePath), checked again by the store.
func (s *Server) guardPaths(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkRequestPath(r); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if h, _ := mux.Handler(r); reflect.TypeOf(h) == redirectType {
			writeError(w, http.StatusNotFound, fmt.Errorf("no route answers %s %s, and the server redirects no request: see GET /v1/openapi.json for the routes", r.Method, shorten(r.URL.EscapedPath())))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// redirectType is the type of the handler ServeMux returns for a path it
// would redirect.
var redirectType = reflect.TypeOf(http.RedirectHandler("/", http.StatusTemporaryRedirect))

// checkRequestPath checks the path as it was sent (escaped), segment by
// segment; under /v1/sessions/{id}/files/ the rest is a file path.
func (s *Server) checkRequestPath(r *http.Request) error {
	escaped := r.URL.EscapedPath()
	if escaped == "/" {
		return nil
	}
	if !strings.HasPrefix(escaped, "/") {
		return badRequest("the request's path %q does not begin with '/': send the path of a route, e.g. /v1/sessions", shorten(escaped))
	}
	segs := strings.Split(escaped[1:], "/")
	route, file := segs, []string(nil)
	if len(segs) > 4 && segs[0] == "v1" && segs[1] == "sessions" && segs[3] == "files" {
		route, file = segs[:4], segs[4:]
	}
	for _, seg := range route {
		if err := checkSegment(escaped, seg); err != nil {
			return err
		}
	}
	if file != nil {
		return s.checkFilePath(strings.Join(file, "/"))
	}
	return nil
}

// checkSegment refuses one segment of a route's path (an id, a name or a
// fixed word) that the router would clean away or decode into another
// path.
func checkSegment(escaped, seg string) error {
	switch {
	case seg == "":
		return badRequest("the path %q has an empty segment (a double '/' or a trailing '/'): ids and names are never empty; send the path without it", shorten(escaped))
	case seg == "." || seg == "..":
		return badRequest("the path %q holds %q as a segment; ids and names are never '.' or '..', and the server redirects no path to its cleaned form", shorten(escaped), seg)
	case encodedSeparator(seg):
		return badRequest("the path %q percent-encodes a '.', '/', '\\' or NUL in %q: ids and names hold no '/', '\\' or NUL, and a '.' is sent as it is", shorten(escaped), shorten(seg))
	}
	return nil
}

// checkFilePath checks the file path of a session file URL (escaped) as
// the store would, and refuses a percent-encoded separator in it: "a/../b"
// must not be cleaned by the router, and "%2e%2e" never decoded into "..".
func (s *Server) checkFilePath(escaped string) error {
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return &sandboxrun.PathError{Path: escaped, Reason: "the URL's percent-encoding is broken: encode each byte as %XX"}
	}
	if err := s.o.Service.CheckFilePath(p); err != nil {
		return err
	}
	if encodedSeparator(escaped) {
		return &sandboxrun.PathError{Path: p, Reason: "the URL percent-encodes a '.', '/', '\\' or NUL; send the path's characters as they are, e.g. /files/out/report.csv"}
	}
	return nil
}

// encodedSeparator reports whether an escaped URL path hides a dot, a
// slash, a backslash or NUL behind percent-encoding.
func encodedSeparator(escaped string) bool {
	l := strings.ToLower(escaped)
	for _, e := range []string{"%2e", "%2f", "%5c", "%00"} {
		if strings.Contains(l, e) {
			return true
		}
	}
	return false
}

// shorten bounds what an error quotes of a request's path.
func shorten(s string) string {
	const most = 200
	if len(s) <= most {
		return s
	}
	return s[:most] + "..."
}
