package skillpack

import (
	"sync"
	"sync/atomic"
)

// Cache keeps packed archives by their digest, the least recently used
// dropped first once they hold more than Keep bytes. It is safe for
// concurrent use.
type Cache struct {
	lim  Limit
	keep int64

	mu    sync.Mutex
	byKey map[string]*Archive
	order []string // least recently used first
	held  int64

	packs atomic.Int64
}

// NewCache packs within lim and keeps at most keep bytes of archives.
func NewCache(lim Limit, keep int64) *Cache {
	return &Cache{lim: lim, keep: keep, byKey: map[string]*Archive{}}
}

// Limit is the cache's packing limit.
func (c *Cache) Limit() Limit { return c.lim }

// Get returns the archive of skill name's folder dir. When digest (the
// folder's skillstore digest, as the caller last computed it) names a
// kept archive, the folder is not read; otherwise it is packed, and kept
// under the digest of what was packed: a folder that changed since its
// digest was taken is sent as it is now, never as a stale copy.
func (c *Cache) Get(name, dir, digest string) (*Archive, error) {
	if digest != "" {
		c.mu.Lock()
		a, ok := c.byKey[digest]
		if ok {
			c.touch(digest)
		}
		c.mu.Unlock()
		if ok {
			return a, nil
		}
	}
	a, err := Pack(name, dir, c.lim)
	if err != nil {
		return nil, err
	}
	c.packs.Add(1)
	c.put(a)
	return a, nil
}

// Packs is how many times a folder was packed.
func (c *Cache) Packs() int64 { return c.packs.Load() }

func (c *Cache) put(a *Archive) {
	n := int64(len(a.Tar))
	if n > c.keep {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[a.Digest]; ok {
		c.touch(a.Digest)
		return
	}
	for c.held+n > c.keep && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.held -= int64(len(c.byKey[old].Tar))
		delete(c.byKey, old)
	}
	c.byKey[a.Digest] = a
	c.order = append(c.order, a.Digest)
	c.held += n
}

// touch moves key to the most recently used end; c.mu is held.
func (c *Cache) touch(key string) {
	for i, k := range c.order {
		if k == key {
			c.order = append(append(c.order[:i:i], c.order[i+1:]...), key)
			return
		}
	}
}
