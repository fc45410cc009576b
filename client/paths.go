package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrBadParam matches a *ParamError: an id, a name or a file path the
// client refused before sending anything.
var ErrBadParam = errors.New("an id, a name or a path no request can carry")

// ErrRedirect matches the *Error of a 3xx answer the client did not follow:
// the API answers no redirect, and following one with the same method
// would act on another resource (DELETE .../snapshots/.. once deleted the
// whole session through a redirect to it).
var ErrRedirect = errors.New("the server answered a redirect, which the client does not follow for a request that changes something")

// ParamError is a parameter of a call that cannot name one resource in a
// URL path: empty, '.', '..', or holding a '/' (for an id or a name) or an
// empty, '.' or '..' folder (for a file path).
type ParamError struct {
	Param  string // "id", "snap", "name", "version" or "path"
	Value  string
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("sandboxrun client: %s %q: %s", e.Param, e.Value, e.Reason)
}

// Unwrap reports ErrBadParam, and ErrBadRequest as the server's 400 for
// the same path would.
func (e *ParamError) Unwrap() []error { return []error{ErrBadParam, ErrBadRequest} }

// checkParam refuses what a router would clean into another path: v as
// an id or a name (one segment), or as a file path (segments, no empty
// one).
func checkParam(k, v string) error {
	segs := []string{v}
	if k == "path" {
		segs = strings.Split(v, "/")
	} else if strings.ContainsAny(v, `/\`) {
		return &ParamError{k, v, `holds a '/' or a '\': ids and names never do; pass the id or the name alone`}
	}
	for _, s := range segs {
		switch s {
		case "":
			if k == "path" {
				return &ParamError{k, v, "has an empty folder (a leading, trailing or double '/'): name the file relative to the workspace, e.g. out/report.csv"}
			}
			return &ParamError{k, v, "is empty: name the " + k}
		case ".", "..":
			return &ParamError{k, v, "holds '.' or '..', which a server would resolve to another resource (the parent): ids and names are never '.' or '..'; give the path clean, e.g. out/report.csv"}
		}
	}
	return nil
}

// pathOf fills an operation's pattern after checking each value. Each is
// escaped as a path segment; a file path keeps its slashes.
func pathOf(pattern string, params map[string]string) (string, error) {
	out := pattern
	for k, v := range params {
		if err := checkParam(k, v); err != nil {
			return "", err
		}
		segs := []string{v}
		if k == "path" {
			segs = strings.Split(v, "/")
		}
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		out = strings.ReplaceAll(out, "{"+k+"}", strings.Join(segs, "/"))
	}
	return out, nil
}

// followOnlyReads wraps an http.Client's CheckRedirect: a redirect of a
// GET or HEAD is followed as next says (Go's default when nil), any other
// request's is handed back unfollowed, for send to refuse.
func followOnlyReads(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if m := via[0].Method; m != http.MethodGet && m != http.MethodHead {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// redirected is the *Error of a redirect that was not followed.
func redirected(resp *http.Response) error {
	return &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s %s answered a redirect to %q, not followed: the API answers none, so a server or a proxy in between is not the one expected",
		resp.Request.Method, resp.Request.URL.Path, resp.Header.Get("Location"))}
}
