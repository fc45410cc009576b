package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// Resolved is a request's skill as the catalog found it: loaded, with its
// source (its trust: Source.Policy) and the digest of its content.
type Resolved struct {
	Skill  *skill.Skill
	Source Source
	Digest string // "sha256:<hex>" (skillstore.Digest)
}

// Resolve is the one place a request's skill reference becomes a skill
// folder: NAME (an operator skill, else owner's newest upload),
// NAME@VERSION or NAME@sha256:HEX (that version; for an operator skill,
// only when its frontmatter version or current digest matches). An
// operator skill's digest is computed once per change of its folder.
func (c *Catalog) Resolve(owner, ref string) (Resolved, error) {
	name, pin := skillstore.SplitRef(ref)
	sk, err := c.Skill(name)
	if err == nil {
		digest, derr := c.digests.of(sk.Dir)
		if derr != nil {
			return Resolved{}, refused(fmt.Errorf("skill %s: %w", name, derr))
		}
		if pin != "" && pin != digest && pin != sk.Manifest.Version {
			return Resolved{}, refused(fmt.Errorf("%w: operator skill %s is at version %q, digest %s, not %s", skill.ErrSkillNotFound, name, sk.Manifest.Version, digest, pin))
		}
		return Resolved{Skill: sk, Source: Operator, Digest: digest}, nil
	}
	if !errors.Is(err, skill.ErrSkillNotFound) || c.uploads == nil || strings.ContainsAny(name, `/\`) {
		return Resolved{}, err
	}
	r, uerr := c.uploads.Resolve(owner, ref)
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
	return Resolved{Skill: up, Source: Uploaded, Digest: r.Digest}, nil
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
	Source  Source `json:"source"`
	// Versions are an uploaded skill's, oldest first.
	Versions []skillstore.Meta `json:"versions,omitempty"`
}

// List lists the operator's skills and owner's uploads, metadata only.
// What could not be listed (a broken skill, an unreadable upload) is in
// the second result, for the operator's log.
func (c *Catalog) List(owner string) ([]Listed, []error) {
	skills, errs := c.Skills()
	out := make([]Listed, 0, len(skills))
	for _, sk := range skills {
		d, err := c.digests.of(sk.Dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, Listed{Name: sk.Manifest.Name, Description: sk.Manifest.Description,
			WhenToUse: sk.Manifest.WhenToUse, DisableModelInvocation: sk.Manifest.DisableModelInvocation,
			Version: sk.Manifest.Version, Digest: d, Source: Operator})
	}
	if c.uploads == nil {
		return out, errs
	}
	ups, err := c.uploads.List(owner)
	if err != nil {
		return out, append(errs, err)
	}
	for _, u := range ups {
		newest := u.Versions[len(u.Versions)-1]
		r, err := c.uploads.Resolve(owner, u.Name+"@"+newest.Digest)
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
			Digest: newest.Digest, Source: Uploaded, Versions: u.Versions})
	}
	return out, errs
}
