package skillstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/limit"
)

// Sentinel errors callers branch on with errors.Is; the HTTP server maps
// them to statuses.
var (
	// ErrNotFound: no such skill or version for this owner. Another
	// owner's skill is not found either, so nobody can probe for it.
	ErrNotFound = errors.New("uploaded skill not found")
	// ErrBadArchive: the upload is not a readable tar or zip, or holds a
	// member the guards refuse (the message names it).
	ErrBadArchive = errors.New("bad skill archive")
	// ErrInvalid is matched by *InvalidError.
	ErrInvalid = errors.New("invalid skill")
	// ErrNameTaken: the skill's name is an operator skill's.
	ErrNameTaken = errors.New("skill name taken")
	// ErrLimit is matched by *LimitError.
	ErrLimit = errors.New("skill upload limit reached")
	// ErrBadRef: a skill reference's pin cannot be read.
	ErrBadRef = errors.New("bad skill reference")
)

// InvalidError is an upload whose skill `sandboxrun validate` refuses:
// its findings, errors and warnings.
type InvalidError struct {
	Name     string   `json:"name,omitempty"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
}

// Error lists the findings.
func (e *InvalidError) Error() string {
	return fmt.Sprintf("the skill does not validate (%s); fix it and upload again (sandboxrun validate shows the same)", strings.Join(e.Errors, "; "))
}

// Unwrap matches ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Limit names, as the policy keys that raise them.
const (
	LimitUploadBytes = "skill_uploads.max_upload_bytes"
	LimitFiles       = "skill_uploads.max_files"
	LimitSkills      = "skill_uploads.max_skills_per_token"
	LimitVersions    = "skill_uploads.max_versions"
)

// LimitError reports a bound reached: its policy key (Limit), its value
// (Value) and the fix (Hint). Its fields and message are the session
// store's too (internal/limit); it is a type of its own so that a caller
// tells an upload's limit from a session's.
type LimitError limit.Error

// Error names the limit, its value and the fix.
func (e *LimitError) Error() string { return (*limit.Error)(e).Error() }

// Unwrap matches ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }
