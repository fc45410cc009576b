package policy

import (
	"fmt"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"
)

// Session defaults when the policy leaves them out.
const (
	DefaultSessionTTL       = 30 * time.Minute
	DefaultSessionMaxTTL    = 24 * time.Hour
	DefaultSessionQuota     = 1 << 30
	DefaultSessionsPerToken = 32
	DefaultSessionsTotal    = 10 << 30
	DefaultSessionMaxFiles  = 10000
	DefaultSessionMaxDepth  = 32
	DefaultSessionSnapshots = 16
)

// SessionRules govern the sessions a server keeps for remote callers: a
// workspace folder each, kept across calls (package session).
//
//	sessions:
//	  root: /var/lib/sandboxrun/sessions  # where; or serve --sessions DIR
//	  write: true            # runs may write the session's workspace (default)
//	  ttl: 30m               # idle time before a session is removed
//	  max_ttl: 24h           # the longest ttl a caller may ask for
//	  quota: 1Gi             # bytes one session's files may take
//	  max_per_token: 32      # sessions one bearer token may hold
//	  max_total_bytes: 10Gi  # all sessions' files together (snapshots' own included)
//	  max_snapshots: 16      # snapshots one session may keep
type SessionRules struct {
	Root          Setting[string]   `yaml:"root" json:"root"`
	Write         Setting[bool]     `yaml:"write" json:"write"`
	TTL           Setting[Duration] `yaml:"ttl" json:"ttl"`
	MaxTTL        Setting[Duration] `yaml:"max_ttl" json:"max_ttl"`
	Quota         Setting[Size]     `yaml:"quota" json:"quota"`
	MaxPerToken   Setting[Count]    `yaml:"max_per_token" json:"max_per_token"`
	MaxTotalBytes Setting[Size]     `yaml:"max_total_bytes" json:"max_total_bytes"`
	MaxFiles      Setting[Count]    `yaml:"max_files" json:"max_files"`
	MaxDepth      Setting[Count]    `yaml:"max_depth" json:"max_depth"`
	MaxSnapshots  Setting[Count]    `yaml:"max_snapshots" json:"max_snapshots"`
}

var sessionKeys = []string{"root", "write", "ttl", "max_ttl", "quota", "max_per_token", "max_total_bytes", "max_files", "max_depth", "max_snapshots"}

// UnmarshalYAML refuses unknown keys.
func (r *SessionRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "sessions", sessionKeys); err != nil {
		return err
	}
	type plain SessionRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "sessions", err)
	}
	*r = SessionRules(v)
	return nil
}

func (r *SessionRules) setBuiltins() {
	r.Write.orBuiltin(true)
	r.TTL.orBuiltin(Duration(DefaultSessionTTL))
	r.MaxTTL.orBuiltin(Duration(DefaultSessionMaxTTL))
	r.Quota.orBuiltin(Size(DefaultSessionQuota))
	r.MaxPerToken.orBuiltin(Count(DefaultSessionsPerToken))
	r.MaxTotalBytes.orBuiltin(Size(DefaultSessionsTotal))
	r.MaxFiles.orBuiltin(Count(DefaultSessionMaxFiles))
	r.MaxDepth.orBuiltin(Count(DefaultSessionMaxDepth))
	r.MaxSnapshots.orBuiltin(Count(DefaultSessionSnapshots))
}

func (r *SessionRules) validate() []error {
	var errs []error
	if r.Root.Set && !filepath.IsAbs(r.Root.Value) {
		errs = append(errs, fmt.Errorf("line %d: sessions.root %q is not an absolute path; write the folder in full, e.g. /var/lib/sandboxrun/sessions", r.Root.Line, r.Root.Value))
	}
	ttl, maxTTL := r.TTL.Value, r.MaxTTL.Value
	if !r.MaxTTL.Set {
		maxTTL = Duration(DefaultSessionMaxTTL)
	}
	if r.TTL.Set && ttl > maxTTL {
		errs = append(errs, fmt.Errorf("line %d: sessions.ttl %v is above sessions.max_ttl %v; lower it or raise max_ttl", r.TTL.Line, ttl, maxTTL))
	}
	quota, total := r.Quota.Value, r.MaxTotalBytes.Value
	if !r.Quota.Set {
		quota = Size(DefaultSessionQuota)
	}
	if !r.MaxTotalBytes.Set {
		total = Size(DefaultSessionsTotal)
	}
	if r.MaxDepth.Set && r.MaxDepth.Value > 1024 {
		errs = append(errs, fmt.Errorf("line %d: sessions.max_depth %v: use at most 1024 (a path is at most 4096 bytes)", r.MaxDepth.Line, r.MaxDepth.Value))
	}
	if (r.Quota.Set || r.MaxTotalBytes.Set) && quota > total {
		errs = append(errs, fmt.Errorf("line %d: sessions.quota %v is above sessions.max_total_bytes %v; one session could never fill it", max(r.Quota.Line, r.MaxTotalBytes.Line), quota, total))
	}
	return errs
}

func (r *SessionRules) entries() []Entry {
	root := r.Root.Value
	if root == "" {
		root = "none (serve --sessions DIR)"
	}
	return []Entry{
		{"sessions.root", root, r.Root.from()},
		{"sessions.write", fmt.Sprint(r.Write.Value), r.Write.from()},
		{"sessions.ttl", time.Duration(r.TTL.Value).String(), r.TTL.from()},
		{"sessions.max_ttl", time.Duration(r.MaxTTL.Value).String(), r.MaxTTL.from()},
		{"sessions.quota", r.Quota.Value.String(), r.Quota.from()},
		{"sessions.max_per_token", r.MaxPerToken.Value.String(), r.MaxPerToken.from()},
		{"sessions.max_total_bytes", r.MaxTotalBytes.Value.String(), r.MaxTotalBytes.from()},
		{"sessions.max_files", r.MaxFiles.Value.String(), r.MaxFiles.from()},
		{"sessions.max_depth", r.MaxDepth.Value.String(), r.MaxDepth.from()},
		{"sessions.max_snapshots", r.MaxSnapshots.Value.String(), r.MaxSnapshots.from()},
	}
}
