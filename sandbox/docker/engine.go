package docker

import (
	"context"
	"sort"
	"sync"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// ErrBeyondHost refuses a Spec the engine's host cannot honour (see
// sandbox.ErrBeyondHost, which it is).
var ErrBeyondHost = sandbox.ErrBeyondHost

// engineFacts are what the engine reports about its host, asked once per
// Docker.
type engineFacts struct {
	cpus     int
	memory   int64
	runtimes []string
	driver   string // the storage driver
}

// engineCache holds the facts after the first successful Info call.
type engineCache struct {
	mu    sync.Mutex
	facts *engineFacts
}

func (c *engineCache) get(ctx context.Context, d *Runner) (*engineFacts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.facts != nil {
		return c.facts, nil
	}
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	info, err := d.client.Info(cctx)
	if err != nil {
		return nil, apiError("ask the engine about its host", err)
	}
	f := &engineFacts{cpus: info.NCPU, memory: info.MemTotal, driver: info.Driver}
	for name := range info.Runtimes {
		f.runtimes = append(f.runtimes, name)
	}
	sort.Strings(f.runtimes)
	c.facts = f
	return f, nil
}
