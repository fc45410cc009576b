package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinels to branch on with errors.Is; every answer the server refused
// is an *Error, which matches the sentinel of its status.
var (
	ErrBadRequest       = errors.New("bad request")                               // 400
	ErrUnauthorized     = errors.New("missing or unknown bearer token")           // 401
	ErrRefused          = errors.New("refused by the server's policy")            // 403
	ErrNotFound         = errors.New("not found")                                 // 404
	ErrRequestTimeout   = errors.New("the request's body did not arrive in time") // 408
	ErrConflict         = errors.New("conflict")                                  // 409
	ErrTooLarge         = errors.New("over a size limit")                         // 413
	ErrUnsupportedMedia = errors.New("unsupported media type")                    // 415
	ErrBusy             = errors.New("too many requests; retry later")            // 429
	ErrServer           = errors.New("the server or the sandbox failed")          // 5xx
	ErrUnavailable      = errors.New("the engine or an image is unavailable")     // 503
	ErrDiskFull         = errors.New("the server's disk is full")                 // 507
	// ErrPartialList is matched by *PartialListError.
	ErrPartialList = errors.New("the list may lack items: not every replica answered")
)

// PartialListError comes with a list that may lack items: the replicas in
// Unreachable did not answer (none named: the server does not know its
// peers, serve without --replicas). The items that came are returned
// beside it.
type PartialListError struct {
	Unreachable []string
}

func (e *PartialListError) Error() string {
	if len(e.Unreachable) == 0 {
		return "sandboxrun server: the list holds one replica's items: the server was started without --replicas"
	}
	return fmt.Sprintf("sandboxrun server: the list lacks the items of replicas %s, which did not answer: retry in a few seconds", strings.Join(e.Unreachable, ", "))
}

// Unwrap matches ErrPartialList.
func (e *PartialListError) Unwrap() error { return ErrPartialList }

// Error is an answer other than success: the status and what the server
// said. For a denied command Part, Reason and Suggest say which part was
// denied and which allowed-tools entry would allow it; for a sandbox that
// failed mid-run Result holds what is known; for a 429 or a 503 RetryAfter
// is the delay the server asked for.
type Error struct {
	Status  int     `json:"-"`
	Message string  `json:"error"`
	Part    string  `json:"part,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Suggest string  `json:"suggest,omitempty"`
	Result  *Result `json:"result,omitempty"`
	// Explanation is, on a refused Explain, what had been decided before
	// the refusal.
	Explanation *Explanation  `json:"explanation,omitempty"`
	RetryAfter  time.Duration `json:"-"`
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("sandboxrun server: %d: %s", e.Status, msg)
}

// Is matches the sentinel of e's status; a 503 or a 507 is also an
// ErrServer, a 3xx is ErrRedirect.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest:
		return target == ErrBadRequest
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusForbidden:
		return target == ErrRefused
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusRequestTimeout:
		return target == ErrRequestTimeout
	case http.StatusConflict:
		return target == ErrConflict
	case http.StatusRequestEntityTooLarge:
		return target == ErrTooLarge
	case http.StatusUnsupportedMediaType:
		return target == ErrUnsupportedMedia
	case http.StatusTooManyRequests:
		return target == ErrBusy
	case http.StatusServiceUnavailable:
		return target == ErrUnavailable || target == ErrServer
	case http.StatusInsufficientStorage:
		return target == ErrDiskFull || target == ErrServer
	}
	if e.Status >= 300 && e.Status < 400 {
		return target == ErrRedirect
	}
	return e.Status >= 500 && target == ErrServer
}
