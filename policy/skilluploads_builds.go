package policy

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults and bounds of skill_uploads.builds.
const (
	DefaultUploadBuildTimeout      = 5 * time.Minute
	DefaultUploadBuildsPerToken    = 1
	maxUploadBuildTimeout          = 20 * time.Minute // the build container's own bound
	maxUploadBuildsPerTokenCeiling = 64
)

// The keys of skill_uploads.builds, for the messages that refuse a build.
const (
	UploadBuildsKey            = "skill_uploads.builds.allow"
	UploadBuildsTimeoutKey     = "skill_uploads.builds.timeout"
	UploadBuildsConcurrencyKey = "skill_uploads.builds.max_concurrent_per_token"
)

// UploadBuildRules say whether an uploaded skill that declares packages
// (python_packages, system_packages, PEP 723 dependencies) may have its
// image built on the server, and within which bounds. Off by default: a
// tenant's upload then never makes the server build anything.
//
//	skill_uploads:
//	  builds:
//	    allow: true                  # default false
//	    timeout: 5m                  # one build, at most 20m
//	    max_concurrent_per_token: 1  # builds one token has running at once
type UploadBuildRules struct {
	Allow                 Setting[bool]     `yaml:"allow" json:"allow"`
	Timeout               Setting[Duration] `yaml:"timeout" json:"timeout"`
	MaxConcurrentPerToken Setting[Count]    `yaml:"max_concurrent_per_token" json:"max_concurrent_per_token"`
}

var uploadBuildKeys = []string{"allow", "timeout", "max_concurrent_per_token"}

// UnmarshalYAML refuses unknown keys.
func (r *UploadBuildRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "skill_uploads.builds", uploadBuildKeys); err != nil {
		return err
	}
	type plain UploadBuildRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "skill_uploads.builds", err)
	}
	*r = UploadBuildRules(v)
	return nil
}

func (r *UploadBuildRules) setBuiltins() {
	r.Allow.orBuiltin(false)
	r.Timeout.orBuiltin(Duration(DefaultUploadBuildTimeout))
	r.MaxConcurrentPerToken.orBuiltin(Count(DefaultUploadBuildsPerToken))
}

func (r *UploadBuildRules) validate() []error {
	var errs []error
	if t := r.Timeout; t.Set && (t.Value <= 0 || time.Duration(t.Value) > maxUploadBuildTimeout) {
		errs = append(errs, fmt.Errorf("line %d: %s %v: use above 0s and at most %v", t.Line, UploadBuildsTimeoutKey, t.Value, Duration(maxUploadBuildTimeout)))
	}
	if c := r.MaxConcurrentPerToken; c.Set && (c.Value < 1 || c.Value > maxUploadBuildsPerTokenCeiling) {
		errs = append(errs, fmt.Errorf("line %d: %s %v: use 1 to %d", c.Line, UploadBuildsConcurrencyKey, c.Value, maxUploadBuildsPerTokenCeiling))
	}
	return errs
}

func (r *UploadBuildRules) entries() []Entry {
	return []Entry{
		{UploadBuildsKey, fmt.Sprint(r.Allow.Value), r.Allow.from()},
		{UploadBuildsTimeoutKey, r.Timeout.Value.String(), r.Timeout.from()},
		{UploadBuildsConcurrencyKey, r.MaxConcurrentPerToken.Value.String(), r.MaxConcurrentPerToken.from()},
	}
}
