package server

import (
	"net/http"

	"github.com/sandboxrun/sandboxrun"
)

// explain answers what a run with this body would be, decided by the plan
// the run itself would follow. Nothing starts, so no execution slot is
// taken; the engine is asked only about its host (CPUs, memory), as the
// run would ask it. The answer names folders as the sandbox mounts them,
// never the host's.
func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	b, err := decodeBody(w, r, anyAction)
	if err != nil {
		writeError(w, statusOf(nil, err), err)
		return
	}
	req, err := b.request()
	if err != nil {
		writeError(w, statusOf(nil, err), err)
		return
	}
	a := sandboxrun.Action{Script: b.Script, Command: b.Command}
	if b.Code != "" {
		a.Code, a.Python = []byte(b.Code), true
	}
	e, err := s.door(r).Explain(r.Context(), r.PathValue("name"), a, req)
	if err != nil {
		// The message and a denial's fields are in sandbox terms already.
		body := newErrorBody(nil, err)
		body.Explanation = e
		writeJSON(w, statusOf(nil, err), body)
		return
	}
	writeJSON(w, http.StatusOK, e)
}
