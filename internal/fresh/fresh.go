// Package fresh keeps figures that are good for a moment: what a check
// asks again and again (a token's bytes on the peers, or in the upload
// store) is counted once a while, not once a call.
package fresh

import (
	"sync"
	"time"
)

// Figures holds a value by key, each good for TTL after it was put. The
// zero value holds nothing and keeps nothing (TTL 0); it is safe for
// concurrent use.
type Figures[K comparable, V any] struct {
	TTL time.Duration

	mu sync.Mutex
	m  map[K]figure[V]
}

type figure[V any] struct {
	v  V
	at time.Time
}

// Get is the value put for k less than TTL before now (a clock set back
// makes it stale too).
func (f *Figures[K, V]) Get(k K, now time.Time) (V, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[k]
	if !ok || now.Sub(e.at) >= f.TTL || now.Before(e.at) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v for k as of at, and lets go of the stale values, so the
// map stays as small as the keys asked for within TTL.
func (f *Figures[K, V]) Put(k K, v V, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[K]figure[V]{}
	}
	for o, e := range f.m {
		if at.Sub(e.at) >= f.TTL {
			delete(f.m, o)
		}
	}
	f.m[k] = figure[V]{v: v, at: at}
}

// Forget drops k's value: the next Get counts afresh.
func (f *Figures[K, V]) Forget(k K) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, k)
}
