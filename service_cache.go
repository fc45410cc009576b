package sandboxrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/plan"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// Values of Result.Cache.
const (
	CacheHit  = "hit"  // the Result of an earlier run with the same inputs
	CacheMiss = "miss" // a run the cache could have answered, now kept
)

// CacheObserver is told of each cacheable run, hit or miss; the server's
// metrics implement it beside Observer.
type CacheObserver interface {
	ObserveCache(hit bool)
}

// cacheInputs is everything a cached Result depends on: any change to one
// is a miss.
type cacheInputs struct {
	Owner       string            `json:"owner"` // "" when cache.shared
	SkillDigest string            `json:"skill_digest"`
	ImageID     string            `json:"image_id"`
	Argv        []string          `json:"argv"`
	Stdin       string            `json:"stdin_sha256"`
	Env         map[string]string `json:"env"`
	Dir         string            `json:"dir"`
	Limits      policy.Limits     `json:"limits"`
	Workspace   string            `json:"workspace_digest"`
	OCIRuntime  string            `json:"oci_runtime"`
}

// cacheKey is the run's key in the result cache and how long its Result is
// kept, or "" when the run may not be cached: caching is off for the
// skill, the run has a network or a writable workspace, it runs in a
// session (whose files change between runs), or an input cannot be read.
func (s *Service) cacheKey(ctx context.Context, eng Engine, rs Resolved, req Request, p *plan.Plan) (string, time.Duration) {
	pol := rs.Source.Policy(s.pol)
	ttl := pol.CacheTTL(rs.Skill.Manifest.Name)
	sp := &p.Spec
	if ttl <= 0 || sp.Limits.Network || sp.Limits.Egress != nil || sp.WorkspaceWritable || req.Session != "" {
		return "", 0
	}
	image := sp.Image
	if image == "" {
		image = RunnerImage()
	}
	imageID, err := s.lookupImage(eng)(ctx, image)
	if err != nil {
		return "", 0
	}
	in := cacheInputs{SkillDigest: rs.Digest, ImageID: imageID, Argv: sp.Argv, Env: sp.Env, Dir: sp.Dir,
		Limits: sp.Limits, OCIRuntime: s.ociRuntime}
	if !pol.CacheShared() {
		in.Owner = req.owner
	}
	sum := sha256.Sum256(sp.Stdin)
	in.Stdin = hex.EncodeToString(sum[:])
	if sp.Workspace != "" {
		if in.Workspace, err = skillstore.Digest(sp.Workspace); err != nil {
			return "", 0
		}
	}
	data, err := json.Marshal(in)
	if err != nil {
		return "", 0
	}
	key := sha256.Sum256(data)
	return hex.EncodeToString(key[:]), ttl
}

// cachedRun answers a run from the cache when it holds its key: the
// Result, marked a hit, replayed to the request's live writers.
func (s *Service) cachedRun(key string, req Request) (*sandbox.Result, bool) {
	if key == "" {
		return nil, false
	}
	res, ok := s.cache.Get(key)
	s.observeCache(ok)
	if !ok {
		return nil, false
	}
	res.Cache = CacheHit
	if req.Stdout != nil {
		_, _ = req.Stdout.Write([]byte(res.Stdout))
	}
	if req.Stderr != nil {
		_, _ = req.Stderr.Write([]byte(res.Stderr))
	}
	return res, true
}

// keepResult caches the Result of a run that ended by itself (not killed
// by a timeout, the OOM killer or a signal, nor failed by the engine).
func (s *Service) keepResult(key string, ttl time.Duration, res *sandbox.Result, err error) {
	if key == "" || err != nil || res == nil || res.TimedOut || res.OOMKilled || res.Signal != "" || res.Error != "" {
		return
	}
	s.cache.Put(key, res, ttl, s.pol.CacheMaxBytes())
	res.Cache = CacheMiss
}

func (s *Service) observeCache(hit bool) {
	if o, ok := s.cfg.Observer.(CacheObserver); ok {
		o.ObserveCache(hit)
	}
}
