package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// BodyReadTimeout is how long a client has to send a JSON request body
// (run, exec, python, explain, a session's or a snapshot's), counted from
// when the server starts reading it: the largest (10 MiB of arguments)
// then needs about 175 KB/s. Past it the answer is 408 and the connection
// is closed. File uploads are bounded instead by how long they may send
// nothing (uploadStall): a large file on a slow link is legitimate.
const BodyReadTimeout = time.Minute

// errSlowBody marks a body that did not arrive in time: 408.
var errSlowBody = errors.New("request body not received in time")

type bodyTimeoutKey struct{}

// boundBodies tells the handlers behind it how long a JSON body may take
// (Options.BodyTimeout).
func (s *Server) boundBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyTimeoutKey{}, s.o.BodyTimeout)))
	})
}

// readWithin reads body to its end within the request's body timeout,
// through the connection's read deadline, which it clears after (as Go's
// server does itself when a body is read to its end): the rest of the
// exchange (a streamed answer, the server watching for a client that left)
// is not bounded by it. A writer without deadlines (a test's recorder)
// reads unbounded in time.
func readWithin(w http.ResponseWriter, r *http.Request, body io.Reader) ([]byte, error) {
	d, ok := r.Context().Value(bodyTimeoutKey{}).(time.Duration)
	if !ok || d <= 0 {
		d = BodyReadTimeout
	}
	rc := http.NewResponseController(w)
	bounded := rc.SetReadDeadline(time.Now().Add(d)) == nil
	raw, err := io.ReadAll(body)
	if bounded {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close")
		return nil, fmt.Errorf("%w: the body did not arrive within %s; send it faster, or put large inputs in a session's files", errSlowBody, d)
	}
	return raw, err
}
