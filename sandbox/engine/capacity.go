package engine

import (
	"context"
	"sync"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// capacity keeps the driver's first answer about its host: CPUs and
// memory do not change under a running process often enough to ask at
// every run. An error is not kept, so an engine that was away is asked
// again.
type capacity struct {
	mu    sync.Mutex
	known bool
	c     sandbox.HostCapacity
}

func (c *capacity) get(ctx context.Context, d Driver) (sandbox.HostCapacity, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known {
		return c.c, nil
	}
	got, err := d.Capacity(ctx)
	if err != nil {
		return sandbox.HostCapacity{}, err
	}
	c.c, c.known = got, true
	return got, nil
}
