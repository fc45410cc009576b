package policy

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultCacheBytes bounds the result cache when cache.max_bytes is not
// set.
const DefaultCacheBytes = 64 << 20

// maxCacheTTL bounds a cache ttl: a Result kept longer than a day is more
// likely stale than useful.
const maxCacheTTL = 24 * time.Hour

// CacheRules turn on the result cache (opt-in): a run with no network and
// no writable workspace whose inputs match a cached run's returns that
// Result at once.
//
//	cache:
//	  ttl: 10m          # how long a Result is kept; unset: no cache
//	  max_bytes: 64Mi   # all cached Results together; the oldest go first
//	  shared: false     # true: a hit may serve another token
//	skills:
//	  report:
//	    cache: {ttl: 1h}  # this operator skill's own ttl
type CacheRules struct {
	TTL      Setting[Duration] `yaml:"ttl" json:"ttl"`
	MaxBytes Setting[Size]     `yaml:"max_bytes" json:"max_bytes"`
	Shared   Setting[bool]     `yaml:"shared" json:"shared"`
}

var cacheKeys = []string{"ttl", "max_bytes", "shared"}

// UnmarshalYAML refuses unknown keys.
func (r *CacheRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "cache", cacheKeys); err != nil {
		return err
	}
	type plain CacheRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "cache", err)
	}
	*r = CacheRules(v)
	return nil
}

func (r *CacheRules) validate(where string, global bool) []error {
	var errs []error
	if r.TTL.Set && (r.TTL.Value <= 0 || time.Duration(r.TTL.Value) > maxCacheTTL) {
		errs = append(errs, fmt.Errorf("line %d: %s.ttl %v: use more than 0 and at most 24h", r.TTL.Line, where, r.TTL.Value))
	}
	if !global && (r.MaxBytes.Set || r.Shared.Set) {
		errs = append(errs, fmt.Errorf("line %d: %s: only ttl may be set per skill; max_bytes and shared belong to the global cache block", max(r.MaxBytes.Line, r.Shared.Line), where))
	}
	if r.MaxBytes.Set && r.MaxBytes.Value < 1 {
		errs = append(errs, fmt.Errorf("line %d: %s.max_bytes %v: use at least 1 byte", r.MaxBytes.Line, where, r.MaxBytes.Value))
	}
	return errs
}

// CacheTTL is how long a Result of skill is cached: the skill's own ttl
// (skills.<name>.cache.ttl), else the global one; 0 when caching is off.
func (o *Operator) CacheTTL(skill string) time.Duration {
	if g := o.grants(skill); g.Cache.TTL.Set {
		return time.Duration(g.Cache.TTL.Value)
	}
	return time.Duration(o.Cache.TTL.Value)
}

// CacheMaxBytes bounds all cached Results together.
func (o *Operator) CacheMaxBytes() int64 {
	if o.Cache.MaxBytes.Set {
		return int64(o.Cache.MaxBytes.Value)
	}
	return DefaultCacheBytes
}

// CacheShared reports whether a cached Result may serve another token.
func (o *Operator) CacheShared() bool { return o.Cache.Shared.Value }

func (o *Operator) cacheEntries() []Entry {
	ttl := "off"
	if o.Cache.TTL.Set {
		ttl = time.Duration(o.Cache.TTL.Value).String()
	}
	return []Entry{
		{"cache.ttl", ttl, o.Cache.TTL.from()},
		{"cache.max_bytes", Size(o.CacheMaxBytes()).String(), o.Cache.MaxBytes.from()},
		{"cache.shared", fmt.Sprint(o.CacheShared()), o.Cache.Shared.from()},
	}
}
