package server

import (
	"errors"
	"mime"
	"net/http"

	"github.com/sandboxrun/sandboxrun"
)

// uploadRoutes serve the skills callers upload (policy skill_uploads).
func (s *Server) uploadRoutes(auth func(http.Handler) http.Handler) {
	route := func(pattern string, h func(http.ResponseWriter, *http.Request, *sandboxrun.Door)) {
		s.mux.Handle(pattern, auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d := s.door(r)
			if err := d.UploadsOn(); err != nil {
				writeError(w, uploadStatus(err), err)
				return
			}
			h(w, r, d)
		})))
	}
	route("POST /v1/skills", s.uploadSkill)
	route("GET /v1/skills/{name}/versions", s.skillVersions)
	route("DELETE /v1/skills/{name}", s.deleteSkill)
	route("DELETE /v1/skills/{name}/versions/{version}", s.deleteSkillVersion)
}

// uploadStatus maps the skill store's errors to HTTP statuses: another
// token's skill is 404 like a missing one.
func uploadStatus(err error) int {
	var lim *sandboxrun.UploadLimitError
	switch {
	case errors.Is(err, sandboxrun.ErrUploadsOff):
		return http.StatusForbidden
	case diskFull(err):
		return http.StatusInsufficientStorage
	case errors.Is(err, sandboxrun.ErrUploadNotFound):
		return http.StatusNotFound
	case errors.Is(err, sandboxrun.ErrBadArchive), errors.Is(err, sandboxrun.ErrBadSkillRef):
		return http.StatusBadRequest
	case errors.Is(err, sandboxrun.ErrInvalidUpload):
		return http.StatusUnprocessableEntity
	case errors.Is(err, sandboxrun.ErrNameTaken):
		return http.StatusConflict
	case errors.As(err, &lim):
		if lim.Limit == sandboxrun.LimitUploadBytes || lim.Limit == sandboxrun.LimitUploadFiles {
			return http.StatusRequestEntityTooLarge
		}
		return http.StatusTooManyRequests
	}
	return statusOf(nil, err)
}

// invalidBody is a 422's answer: validate's findings beside the message.
type invalidBody struct {
	Error    string   `json:"error"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
}

func (s *Server) uploadSkill(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	format := sandboxrun.UploadFormat(mt)
	if err != nil || (format != sandboxrun.UploadTar && format != sandboxrun.UploadZip) {
		writeError(w, http.StatusUnsupportedMediaType, badRequest("POST /v1/skills takes one skill as a tar (Content-Type: %s) or a zip (%s)", sandboxrun.UploadTar, sandboxrun.UploadZip))
		return
	}
	up, err := d.UploadSkill(format, guardStalls(w, r))
	var inv *sandboxrun.InvalidUploadError
	switch {
	case errors.As(err, &inv):
		writeJSON(w, http.StatusUnprocessableEntity, invalidBody{Error: err.Error(), Errors: nonNil(inv.Errors), Warnings: nonNil(inv.Warnings)})
		return
	case err != nil:
		writeError(w, uploadStatus(err), err)
		return
	}
	annotate(r, "skill", up.Name, "skill_digest", up.Digest)
	up.Warnings = nonNil(up.Warnings)
	status := http.StatusCreated
	if !up.Created {
		status = http.StatusOK
	}
	writeJSON(w, status, up)
}

func (s *Server) skillVersions(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	vs, err := d.SkillVersions(r.PathValue("name"))
	if err != nil {
		writeError(w, uploadStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": r.PathValue("name"), "versions": vs})
}

func (s *Server) deleteSkill(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	if err := d.DeleteSkill(r.PathValue("name")); err != nil {
		writeError(w, uploadStatus(err), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteSkillVersion(w http.ResponseWriter, r *http.Request, d *sandboxrun.Door) {
	if err := d.DeleteSkillVersion(r.PathValue("name"), r.PathValue("version")); err != nil {
		writeError(w, uploadStatus(err), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) {
	skills, errs := s.door(r).ListSkills()
	for _, err := range errs {
		s.log.Warn("skill left out of the list", "err", err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"skills": skills})
}
