// Package resultcache keeps the Results of deterministic runs by key (the
// Service's policy cache:), each until its expiry, all together within a
// byte bound, least recently used first out.
package resultcache

import (
	"container/list"
	"slices"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Cache keeps Results of deterministic runs by key, each until its
// expiry, all together within the maxBytes of each Put: the least
// recently used go first. It is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*list.Element
	lru     *list.List // front: most recently used
	bytes   int64
	now     func() time.Time
}

type cachedResult struct {
	key     string
	res     sandbox.Result
	size    int64
	expires time.Time
}

// New is an empty cache on the clock now.
func New(now func() time.Time) *Cache {
	return &Cache{entries: map[string]*list.Element{}, lru: list.New(), now: now}
}

// Get returns a copy of the Result kept under key, if it has not expired.
func (c *Cache) Get(key string) (*sandbox.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	cr := e.Value.(*cachedResult)
	if !c.now().Before(cr.expires) {
		c.remove(e)
		return nil, false
	}
	c.lru.MoveToFront(e)
	return copyResult(&cr.res), true
}

// Put keeps a copy of res under key for ttl, then evicts the least
// recently used entries past maxBytes (res itself too, when it alone is
// larger).
func (c *Cache) Put(key string, res *sandbox.Result, ttl time.Duration, maxBytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.remove(e)
	}
	cr := &cachedResult{key: key, res: *copyResult(res), expires: c.now().Add(ttl)}
	cr.size = int64(len(res.Stdout)+len(res.Stderr)+len(res.Output)+len(key)) + 512
	c.entries[key] = c.lru.PushFront(cr)
	c.bytes += cr.size
	for c.bytes > maxBytes && c.lru.Len() > 0 {
		c.remove(c.lru.Back())
	}
}

func (c *Cache) remove(e *list.Element) {
	cr := e.Value.(*cachedResult)
	c.lru.Remove(e)
	delete(c.entries, cr.key)
	c.bytes -= cr.size
}

// copyResult copies what a caller could change in a cached Result.
func copyResult(r *sandbox.Result) *sandbox.Result {
	out := *r
	out.Command = slices.Clone(r.Command)
	out.Output = slices.Clone(r.Output)
	out.Files = slices.Clone(r.Files)
	return &out
}
