package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun"
)

// Media types of the bulk file calls.
const (
	mediaTar   = "application/x-tar"
	mediaBytes = "application/octet-stream"
)

// maxSessionBody bounds the body of POST /v1/sessions.
const maxSessionBody = 4 << 10

func (s *Server) sessionRoutes(auth func(http.Handler) http.Handler) {
	route := func(pattern string, h func(http.ResponseWriter, *http.Request, *sandboxrun.Door)) {
		s.mux.Handle(pattern, auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d := s.door(r)
			if err := d.SessionsOn(); err != nil {
				writeError(w, sessionStatus(err), err)
				return
			}
			h(w, r, d)
		})))
	}
	route("POST /v1/sessions", s.createSession)
	route("GET /v1/sessions", s.listSessions)
	route("GET /v1/sessions/{id}", s.getSession)
	route("DELETE /v1/sessions/{id}", s.deleteSession)
	route("POST /v1/sessions/{id}/snapshots", s.createSnapshot)
	route("GET /v1/sessions/{id}/snapshots", s.listSnapshots)
	route("DELETE /v1/sessions/{id}/snapshots/{snap}", s.deleteSnapshot)
	route("POST /v1/sessions/{id}/restore", s.restoreSnapshot)
	route("GET /v1/sessions/{id}/files", s.listFiles)
	route("PUT /v1/sessions/{id}/files", s.putTar)
	route("PUT /v1/sessions/{id}/files/{path...}", s.putFile)
	route("GET /v1/sessions/{id}/files/{path...}", s.getFile)
	route("DELETE /v1/sessions/{id}/files/{path...}", s.deleteFile)
}

// sessionStatus maps what the session store (through the Service) returned
// to an HTTP status: another token's session is 404 like a missing one,
// never 403, so a status tells nothing of sessions that are not yours.
func sessionStatus(err error) int {
	var lim *sandboxrun.SessionLimitError
	switch {
	case diskFull(err):
		return http.StatusInsufficientStorage // before ErrBadTar: a tar cut short by the disk is not the caller's
	case errors.Is(err, errSlowBody):
		return http.StatusRequestTimeout // before ErrBadTar too: the tar was cut short by its sender's silence
	case errors.Is(err, sandboxrun.ErrSessionNotFound), errors.Is(err, sandboxrun.ErrFileNotFound), errors.Is(err, sandboxrun.ErrSnapshotNotFound):
		return http.StatusNotFound
	case errors.Is(err, sandboxrun.ErrBadPath), errors.Is(err, sandboxrun.ErrBadTar), errors.Is(err, sandboxrun.ErrBadTTL),
		errors.Is(err, errBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, sandboxrun.ErrNotFile):
		return http.StatusConflict
	case errors.As(err, &lim):
		switch lim.Limit {
		case sandboxrun.LimitSessionsPerToken:
			return http.StatusTooManyRequests
		case sandboxrun.LimitSessionTTL, sandboxrun.LimitSessionDepth:
			return http.StatusBadRequest
		case sandboxrun.LimitSnapshots:
			return http.StatusConflict // delete a snapshot first
		}
		return http.StatusRequestEntityTooLarge
	}
	return statusOf(nil, err)
}

// isSessionError reports whether err is the session store's, to be
// answered by sessionStatus.
func isSessionError(err error) bool {
	for _, e := range []error{sandboxrun.ErrSessionNotFound, sandboxrun.ErrFileNotFound, sandboxrun.ErrBadPath, sandboxrun.ErrBadTar,
		sandboxrun.ErrBadTTL, sandboxrun.ErrNotFile, sandboxrun.ErrSessionLimit, sandboxrun.ErrSnapshotNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// createSessionBody is POST /v1/sessions's JSON: a TTL, and the session
// (or one of its snapshots) a fork starts from.
type createSessionBody struct {
	TTL  json.RawMessage `json:"ttl"`
	From *struct {
		Session  string `json:"session"`
		Snapshot string `json:"snapshot"`
	} `json:"from"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	var body createSessionBody
	if err := readSmallJSON(w, r, &body); err != nil {
		writeError(w, smallBodyStatus(err), badRequest("the body is not {\"ttl\": \"30m\", \"from\": {\"session\": ID, \"snapshot\": SNAP}} (every key optional) or empty: %v", err))
		return
	}
	if body.From != nil && body.From.Session == "" {
		writeError(w, http.StatusBadRequest, badRequest("from: name the session to fork, {\"from\": {\"session\": ID}}, with its \"snapshot\" to fork that instead"))
		return
	}
	ttl, err := execBody{Timeout: body.TTL}.timeout()
	if err != nil {
		writeError(w, http.StatusBadRequest, badRequest("ttl: give seconds (1800) or a duration (\"30m\")"))
		return
	}
	var info sandboxrun.SessionInfo
	if body.From != nil {
		info, err = d.ForkSession(body.From.Session, body.From.Snapshot, ttl)
	} else {
		info, err = d.CreateSession(ttl)
	}
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	annotate(r, "session", info.ID)
	writeJSON(w, http.StatusCreated, info)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	list, err := d.Sessions()
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, s.fwd.gather(r, list))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	info, err := d.Session(r.PathValue("id"))
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	if err := d.DeleteSession(r.PathValue("id")); err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) putFile(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	fi, err := d.PutFile(r.PathValue("id"), r.PathValue("path"), guardStalls(w, r))
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	writeJSON(w, http.StatusCreated, fi)
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	f, e, err := d.OpenFile(r.PathValue("id"), r.PathValue("path"))
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", mediaBytes)
	h.Set("Content-Length", strconv.FormatInt(e.Size, 10))
	h.Set("ETag", `"`+e.SHA256+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	if match := r.Header.Get("If-None-Match"); match != "" && match == h.Get("ETag") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = io.CopyN(w, f, e.Size) // the client may be gone
	}
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	if err := d.DeleteFile(r.PathValue("id"), r.PathValue("path")); err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listFiles lists the workspace in JSON, or streams it as a tar when the
// client accepts application/x-tar.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	id := r.PathValue("id")
	if accepts(r, mediaTar) {
		// The session's existence is checked first, so a missing one is a
		// 404 rather than an empty tar.
		if _, err := d.Session(id); err != nil {
			writeError(w, sessionStatus(err), err)
			return
		}
		w.Header().Set("Content-Type", mediaTar)
		w.WriteHeader(http.StatusOK)
		if err := d.WriteTar(id, w); err != nil {
			// The status is out: the cut stream (no tar end marker) is
			// what tells the client.
			s.log.Warn("session tar download cut short", "session", id, "err", err)
			panic(http.ErrAbortHandler)
		}
		return
	}
	files, err := d.ListFiles(id, r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": nonNil(files)})
}

func (s *Server) putTar(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != mediaTar {
		writeError(w, http.StatusUnsupportedMediaType, badRequest("PUT /v1/sessions/{id}/files takes a tar (Content-Type: %s); put one file with PUT /v1/sessions/{id}/files/{path}", mediaTar))
		return
	}
	files, err := d.PutTar(r.PathValue("id"), guardStalls(w, r))
	if err != nil {
		writeError(w, sessionStatus(err), err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"files": nonNil(files)})
}

// accepts reports whether the Accept header names media.
func accepts(r *http.Request, media string) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == media {
			return true
		}
	}
	return false
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// uploadStall bounds how long an upload may send nothing: the session is
// held while its body is read, so a client that stalls must not hold it
// (and the runs waiting for it) for longer.
const uploadStall = 30 * time.Second

// stallGuard reads an upload's body, moving the connection's read deadline
// forward before each read: a slow client is fine, a silent one is cut off.
type stallGuard struct {
	r  io.Reader
	rc *http.ResponseController
}

func guardStalls(w http.ResponseWriter, r *http.Request) io.Reader {
	return &stallGuard{r: r.Body, rc: http.NewResponseController(w)}
}

func (g *stallGuard) Read(p []byte) (int, error) {
	_ = g.rc.SetReadDeadline(time.Now().Add(uploadStall)) // unsupported on some test writers: then unbounded, as before
	n, err := g.r.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: nothing of the upload arrived for %s", errSlowBody, uploadStall)
	}
	return n, err
}
