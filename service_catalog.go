package sandboxrun

import (
	"github.com/sandboxrun/sandboxrun/catalog"
	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// Skills are found by package catalog: the operator's, the callers'
// uploads, pins and digests. A resolved skill carries its source, which
// is its trust (catalog.Source.Policy).

// Resolved is a request's skill as the Service found it: loaded, with its
// source and the digest of its content.
type Resolved = catalog.Resolved

// Listed is one skill of a listing (GET /v1/skills).
type Listed = catalog.Listed

// Sources of a skill, as GET /v1/skills and Observed report them.
const (
	SourceOperator = string(catalog.Operator)
	SourceUploaded = string(catalog.Uploaded)
)

// ErrUploadsOff means the operator's policy does not let callers upload
// skills (skill_uploads.allow is none), or gave them nowhere to go.
var ErrUploadsOff = catalog.ErrUploadsOff

// What an uploaded skill may have built (catalog.Catalog.UploadImage).
var (
	// ErrUploadBuildsOff: an uploaded skill declares packages, and the
	// policy builds no images for uploads. A refusal: HTTP 403.
	ErrUploadBuildsOff = catalog.ErrUploadBuildsOff
	// ErrUploadBuild: an uploaded skill's image cannot be built from what
	// it declares, or its build ran past skill_uploads.builds.timeout:
	// HTTP 422.
	ErrUploadBuild = catalog.ErrUploadBuild
	// ErrUploadBuildsBusy: the caller's token has as many image builds
	// running as the policy allows: HTTP 429.
	ErrUploadBuildsBusy = catalog.ErrUploadBuildsBusy
)

// Skills lists the operator's skills, metadata only (catalog.Catalog.Skills).
func (s *Service) Skills() ([]*skill.Skill, []error) { return s.cat.Skills() }

// Skill loads an operator skill whole by name (or, with
// Config.AllowSkillPaths, by path): catalog.Catalog.Skill. Its errors
// match ErrRefused.
func (s *Service) Skill(ref string) (*skill.Skill, error) { return s.cat.Skill(ref) }

// ResolveSkill is owner's reference ref as a skill: an operator skill,
// else owner's upload, pinned or not (catalog.Catalog.Resolve).
func (s *Service) ResolveSkill(owner, ref string) (Resolved, error) { return s.cat.Resolve(owner, ref) }

// skillStore is the store of uploaded skills, or an error matching
// ErrUploadsOff (and ErrRefused) when the policy does not enable uploads.
func (s *Service) skillStore() (*skillstore.Store, error) { return s.cat.Uploads() }
