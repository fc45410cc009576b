package engine

import (
	"context"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// capacity keeps the driver's answer about its host: CPUs and memory do
// not change under a running process often enough to ask at every run.
// With a ttl it is asked again once the answer is that old. An error is
// not kept, so an engine that was away is asked again.
type capacity struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	known bool
	at    time.Time
	c     sandbox.HostCapacity
}

func (c *capacity) get(ctx context.Context, d Driver) (sandbox.HostCapacity, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known && (c.ttl == 0 || c.now().Sub(c.at) < c.ttl) {
		return c.c, nil
	}
	got, err := d.Capacity(ctx)
	if err != nil {
		return sandbox.HostCapacity{}, err
	}
	c.c, c.known, c.at = got, true, c.now()
	return got, nil
}
