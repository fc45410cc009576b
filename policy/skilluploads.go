package policy

import (
	"fmt"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Values of skill_uploads.allow.
const (
	UploadsNone   = "none"
	UploadsTokens = "tokens"
)

// Defaults of the skill upload limits when the policy leaves them out.
const (
	DefaultUploadBytes       = 30 << 20
	DefaultUploadFiles       = 1000
	DefaultUploadSkills      = 32
	DefaultUploadVersions    = 16
	maxUploadBytesCeiling    = 1 << 30
	maxUploadFilesCeiling    = 100000
	maxUploadPerTokenCeiling = 10000
)

// SkillUploadRules govern the skills callers upload over the API (POST
// /v1/skills). Off by default. An uploaded skill gets the policy's
// defaults and nothing a `skills.<name>` entry grants, whatever its name:
// grants never travel by name.
//
//	skill_uploads:
//	  allow: tokens               # none (default): the endpoints answer 403
//	  store: /var/lib/sandboxrun/uploads  # default: uploads/ beside the sessions root
//	  max_upload_bytes: 30Mi      # one upload's archive, and what it unpacks to
//	  max_files: 1000             # files, folders and links of one skill
//	  max_skills_per_token: 32    # skill names one token keeps
//	  max_versions: 16            # versions one token keeps of one skill
//	  builds: {allow: false}      # image builds for uploads (UploadBuildRules)
type SkillUploadRules struct {
	Allow             Setting[string]  `yaml:"allow" json:"allow"`
	Store             Setting[string]  `yaml:"store" json:"store"`
	MaxUploadBytes    Setting[Size]    `yaml:"max_upload_bytes" json:"max_upload_bytes"`
	MaxFiles          Setting[Count]   `yaml:"max_files" json:"max_files"`
	MaxSkillsPerToken Setting[Count]   `yaml:"max_skills_per_token" json:"max_skills_per_token"`
	MaxVersions       Setting[Count]   `yaml:"max_versions" json:"max_versions"`
	Builds            UploadBuildRules `yaml:"builds" json:"builds"`
}

var skillUploadKeys = []string{"allow", "store", "max_upload_bytes", "max_files", "max_skills_per_token", "max_versions", "builds"}

// UnmarshalYAML refuses unknown keys.
func (r *SkillUploadRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "skill_uploads", skillUploadKeys); err != nil {
		return err
	}
	type plain SkillUploadRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "skill_uploads", err)
	}
	*r = SkillUploadRules(v)
	return nil
}

// Enabled reports whether callers may upload skills.
func (r *SkillUploadRules) Enabled() bool { return r.Allow.Value == UploadsTokens }

func (r *SkillUploadRules) setBuiltins() {
	r.Allow.orBuiltin(UploadsNone)
	r.MaxUploadBytes.orBuiltin(Size(DefaultUploadBytes))
	r.MaxFiles.orBuiltin(Count(DefaultUploadFiles))
	r.MaxSkillsPerToken.orBuiltin(Count(DefaultUploadSkills))
	r.MaxVersions.orBuiltin(Count(DefaultUploadVersions))
	r.Builds.setBuiltins()
}

func (r *SkillUploadRules) validate() []error {
	var errs []error
	if err := r.Allow.oneOf("skill_uploads.allow", UploadsNone, UploadsTokens); err != nil {
		errs = append(errs, err)
	}
	if r.Store.Set && !filepath.IsAbs(r.Store.Value) {
		errs = append(errs, fmt.Errorf("line %d: skill_uploads.store %q is not an absolute path; write the folder in full, e.g. /var/lib/sandboxrun/skills", r.Store.Line, r.Store.Value))
	}
	bound := func(key string, s Setting[Count], ceiling int64) {
		if s.Set && (s.Value < 1 || int64(s.Value) > ceiling) {
			errs = append(errs, fmt.Errorf("line %d: skill_uploads.%s %v: use 1 to %d", s.Line, key, s.Value, ceiling))
		}
	}
	if s := r.MaxUploadBytes; s.Set && (s.Value < 1 || s.Value > maxUploadBytesCeiling) {
		errs = append(errs, fmt.Errorf("line %d: skill_uploads.max_upload_bytes %v: use 1 byte to 1Gi", s.Line, s.Value))
	}
	bound("max_files", r.MaxFiles, maxUploadFilesCeiling)
	bound("max_skills_per_token", r.MaxSkillsPerToken, maxUploadPerTokenCeiling)
	bound("max_versions", r.MaxVersions, maxUploadPerTokenCeiling)
	return append(errs, r.Builds.validate()...)
}

func (r *SkillUploadRules) entries() []Entry {
	store := r.Store.Value
	if store == "" {
		store = "beside the sessions root (uploads/)"
	}
	return append([]Entry{
		{"skill_uploads.allow", r.Allow.Value, r.Allow.from()},
		{"skill_uploads.store", store, r.Store.from()},
		{"skill_uploads.max_upload_bytes", r.MaxUploadBytes.Value.String(), r.MaxUploadBytes.from()},
		{"skill_uploads.max_files", r.MaxFiles.Value.String(), r.MaxFiles.from()},
		{"skill_uploads.max_skills_per_token", r.MaxSkillsPerToken.Value.String(), r.MaxSkillsPerToken.from()},
		{"skill_uploads.max_versions", r.MaxVersions.Value.String(), r.MaxVersions.from()},
	}, r.Builds.entries()...)
}

// ForUploaded is the policy an uploaded skill runs under: this one without
// any `skills.<name>` grants, so a tenant cannot inherit another skill's
// network, secrets, tools, packages or limits by choosing its name.
func (o *Operator) ForUploaded() *Operator {
	c := *o
	c.Skills = nil
	return &c
}
