package server

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/sandboxrun/sandboxrun"
)

// readSmallJSON decodes a small optional JSON body into v as decodeStrict
// does; an empty body leaves v as it is.
func readSmallJSON(w http.ResponseWriter, r *http.Request, v any) error {
	raw, err := readBody(w, r, maxSessionBody)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return err
	}
	return decodeStrict(raw, v)
}

// smallBodyStatus is 413 for a body over its bound, else 400.
func smallBodyStatus(err error) int {
	if errors.Is(err, errTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	var body struct {
		Label string `json:"label"`
	}
	if err := readSmallJSON(w, r, &body); err != nil {
		writeError(w, smallBodyStatus(err), badRequest("the body is not {\"label\": \"...\"} or empty: %v", err))
		return
	}
	snap, err := d.Snapshot(r.PathValue("id"), body.Label)
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	annotate(r, "snapshot", snap.ID)
	writeJSON(w, http.StatusCreated, snap)
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	snaps, err := d.Snapshots(r.PathValue("id"))
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshots": snaps})
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	if err := d.DeleteSnapshot(r.PathValue("id"), r.PathValue("snap")); err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) restoreSnapshot(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	var body struct {
		Snapshot string `json:"snapshot"`
	}
	err := readSmallJSON(w, r, &body)
	if err == nil && body.Snapshot == "" {
		err = errNoSnapshot
	}
	if err != nil {
		writeError(w, smallBodyStatus(err), badRequest("the body is not {\"snapshot\": SNAP}: %v", err))
		return
	}
	info, err := d.Restore(r.PathValue("id"), body.Snapshot)
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

var errNoSnapshot = errors.New("no snapshot named: list them with GET /v1/sessions/{id}/snapshots")
