package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/sandboxrun/sandboxrun"
)

// usageAll is the answer of GET /v1/usage?all=true: every token's use.
type usageAll struct {
	Tenants []sandboxrun.TenantUsage `json:"tenants"`
}

// usage serves GET /v1/usage: the caller's own use by window, or with
// all=true every token's (for a token the policy lists under
// tenants.operators).
// A peer asking for its stored_bytes check (ForwardedHeader) is told this
// replica's own figures, so that no ask fans out twice; a caller who sets
// that header gets the same, which is less.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	d := s.door(r)
	if r.Header.Get(ForwardedHeader) != "" {
		c := d.Caller()
		c.OtherReplicas = nil
		d = s.o.Service.For(c)
	}
	if all, _ := strconv.ParseBool(r.URL.Query().Get("all")); all {
		ts, err := d.UsageAll()
		if err != nil {
			writeError(w, statusOf(nil, err), err)
			return
		}
		writeJSON(w, http.StatusOK, usageAll{Tenants: ts})
		return
	}
	u, err := d.Usage()
	if err != nil {
		writeError(w, statusOf(nil, err), err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

// retryAfterOf is the Retry-After of a 429: when the quota's window ends,
// or a second for a full queue; "" (none) for stored_bytes, which no wait
// frees.
func retryAfterOf(err error) string {
	var qe *sandboxrun.QuotaError
	if errors.As(err, &qe) {
		if s := qe.RetryAfterSeconds(); s > 0 {
			return strconv.FormatInt(s, 10)
		}
		return ""
	}
	return "1"
}
