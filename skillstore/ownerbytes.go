package skillstore

import (
	"sync"
	"time"
)

// bytesTTL is how long the store reuses what it counted of an owner's
// uploads: the stored_bytes check and each metrics scrape ask for it, and
// counting reads every version's metadata. This process's own commits and
// removals forget the owner's figure at once; another replica's, on a
// shared store, are seen within bytesTTL.
const bytesTTL = 2 * time.Second

// ownerBytes caches the bytes of each owner's uploads, by owner folder.
type ownerBytes struct {
	mu sync.Mutex
	m  map[string]bytesFigure
}

type bytesFigure struct {
	n  int64
	at time.Time
}

func (o *ownerBytes) get(od string, now time.Time) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f, ok := o.m[od]
	if !ok || now.Sub(f.at) >= bytesTTL || now.Before(f.at) {
		return 0, false
	}
	return f.n, true
}

func (o *ownerBytes) put(od string, n int64, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]bytesFigure{}
	}
	o.m[od] = bytesFigure{n: n, at: at}
}

func (o *ownerBytes) forget(od string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, od)
}

// OwnerBytes is what owner's uploaded versions hold (their files' bytes,
// as each version's metadata says), counted at most bytesTTL ago.
func (s *Store) OwnerBytes(owner string) (int64, error) {
	od, err := ownerDir(owner)
	if err != nil {
		return 0, nil
	}
	now := s.now()
	if n, ok := s.counted.get(od, now); ok {
		return n, nil
	}
	skills, err := s.List(owner)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, sk := range skills {
		for _, v := range sk.Versions {
			n += v.Bytes
		}
	}
	s.counted.put(od, n, now)
	return n, nil
}
