package sandboxrun

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// ErrUploadsOff means the operator's policy does not let callers upload
// skills (skill_uploads.allow is none), or gave them nowhere to go.
var ErrUploadsOff = errors.New("skill uploads are off")

// Sources of a skill, as GET /v1/skills reports them.
const (
	SourceOperator = "operator"
	SourceUploaded = "uploaded"
)

// openUploads opens the skill store when the policy enables uploads; the
// error, when it does not, is what the endpoints answer.
func openUploads(cfg Config, pol *policy.Operator) (*skillstore.Store, error) {
	r := pol.SkillUploads
	if !r.Enabled() {
		return nil, refused(fmt.Errorf("%w: the operator enables them with skill_uploads: {allow: tokens} in the policy", ErrUploadsOff))
	}
	root := uploadsRoot(cfg, pol)
	if root == "" {
		return nil, refused(fmt.Errorf("%w: skill_uploads has no store: set skill_uploads.store, or a sessions root (serve --sessions DIR)", ErrUploadsOff))
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, where.Errorf("skill_uploads.store %q: %w", where.Path(root), err)
	}
	if err := checkUploadsRoot(abs, r.Store.Value != "", cfg.SkillRoots, sessionsRoot(cfg, pol)); err != nil {
		return nil, err
	}
	lim := skillstore.Limits{
		MaxUploadBytes: int64(r.MaxUploadBytes.Value),
		MaxFiles:       int(r.MaxFiles.Value),
		MaxSkills:      int(r.MaxSkillsPerToken.Value),
		MaxVersions:    int(r.MaxVersions.Value),
	}
	roots := cfg.SkillRoots
	operatorHas := func(name string) bool {
		_, err := skill.Locate(roots, name)
		return err == nil
	}
	st, err := skillstore.Open(abs, lim, skillstore.WithReserved(operatorHas), skillstore.WithPackageCheck(uploadPackageCheck(pol)))
	if err != nil {
		return nil, fmt.Errorf("open skill_uploads.store: %w", err)
	}
	return st, nil
}

// skillStore is the store of uploaded skills, or an error matching
// ErrUploadsOff (and ErrRefused) when the policy does not enable uploads.
func (s *Service) skillStore() (*skillstore.Store, error) {
	if s.uploads == nil {
		return nil, s.uploadsErr
	}
	return s.uploads, nil
}

// policyFor is the policy a skill from source (Resolved.Source, where
// ResolveSkill found it) is decided by: the operator's for an operator
// skill; for an upload, the same without grants by name. Trust follows
// the source ResolveSkill reports, never where the folder lies.
func (s *Service) policyFor(source string) *policy.Operator {
	if source == SourceUploaded {
		return s.pol.ForUploaded()
	}
	return s.pol
}

// Resolved is a request's skill as the Service found it: loaded, with its
// source and the digest of its content.
type Resolved struct {
	Skill  *skill.Skill
	Source string // SourceOperator or SourceUploaded
	Digest string // "sha256:<hex>" (skillstore.Digest)
}

// ResolveSkill is the one place a request's skill reference becomes a
// skill folder: NAME (an operator skill, else owner's newest upload),
// NAME@VERSION or NAME@sha256:HEX (that version; for an operator skill,
// only when its frontmatter version or current digest matches). An
// operator skill's digest is computed once per change of its folder.
func (s *Service) ResolveSkill(owner, ref string) (Resolved, error) {
	name, pin := skillstore.SplitRef(ref)
	sk, err := s.Skill(name)
	if err == nil {
		digest, derr := s.digests.of(sk.Dir)
		if derr != nil {
			return Resolved{}, refused(fmt.Errorf("skill %s: %w", name, derr))
		}
		if pin != "" && pin != digest && pin != sk.Manifest.Version {
			return Resolved{}, refused(fmt.Errorf("%w: operator skill %s is at version %q, digest %s, not %s", skill.ErrSkillNotFound, name, sk.Manifest.Version, digest, pin))
		}
		return Resolved{Skill: sk, Source: SourceOperator, Digest: digest}, nil
	}
	if !errors.Is(err, skill.ErrSkillNotFound) || s.uploads == nil || strings.ContainsAny(name, `/\`) {
		return Resolved{}, err
	}
	r, uerr := s.uploads.Resolve(owner, ref)
	switch {
	case errors.Is(uerr, skillstore.ErrNotFound) && pin == "":
		return Resolved{}, err // the operator's message: a skill not found
	case uerr != nil:
		return Resolved{}, refused(fmt.Errorf("%w: %w", skill.ErrSkillNotFound, uerr))
	}
	up, err := skill.Load(r.Dir)
	if err != nil {
		return Resolved{}, refused(fmt.Errorf("uploaded skill %s: %w", ref, err))
	}
	return Resolved{Skill: up, Source: SourceUploaded, Digest: r.Digest}, nil
}

// Listed is one skill of a listing (GET /v1/skills): the frontmatter an
// agent chooses by, where the skill comes from, and the digest of what a
// bare name runs.
type Listed struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	WhenToUse   string `json:"when_to_use,omitempty"`
	// DisableModelInvocation: the host may run the skill, but must not
	// show it to a model.
	DisableModelInvocation bool `json:"disable_model_invocation,omitempty"`
	// Version is the frontmatter's version (an operator skill) or the
	// newest upload's.
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest"`
	Source  string `json:"source"`
	// Versions are an uploaded skill's, oldest first.
	Versions []skillstore.Meta `json:"versions,omitempty"`
}

// listSkills lists the operator's skills and owner's uploads, metadata
// only. What could not be listed (a broken skill, an unreadable upload)
// is in the second result, for the operator's log.
func (s *Service) listSkills(owner string) ([]Listed, []error) {
	skills, errs := s.Skills()
	out := make([]Listed, 0, len(skills))
	for _, sk := range skills {
		d, err := s.digests.of(sk.Dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, Listed{Name: sk.Manifest.Name, Description: sk.Manifest.Description,
			WhenToUse: sk.Manifest.WhenToUse, DisableModelInvocation: sk.Manifest.DisableModelInvocation,
			Version: sk.Manifest.Version, Digest: d, Source: SourceOperator})
	}
	if s.uploads == nil {
		return out, errs
	}
	ups, err := s.uploads.List(owner)
	if err != nil {
		return out, append(errs, err)
	}
	for _, u := range ups {
		newest := u.Versions[len(u.Versions)-1]
		r, err := s.uploads.Resolve(owner, u.Name+"@"+newest.Digest)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sk, err := skill.LoadMeta(r.Dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, Listed{Name: u.Name, Description: sk.Manifest.Description,
			WhenToUse: sk.Manifest.WhenToUse, DisableModelInvocation: sk.Manifest.DisableModelInvocation, Version: newest.Version,
			Digest: newest.Digest, Source: SourceUploaded, Versions: u.Versions})
	}
	return out, errs
}
