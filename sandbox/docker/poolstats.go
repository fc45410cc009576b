package docker

import "github.com/sandboxrun/sandboxrun/sandbox"

// PoolStats returns the warm pool's figures; all zero when it is off.
func (d *Runner) PoolStats() sandbox.PoolStats {
	p := d.pool
	if p == nil {
		return sandbox.PoolStats{}
	}
	p.mu.Lock()
	ready := p.count
	p.mu.Unlock()
	return sandbox.PoolStats{Size: p.sizer.Max(), Ready: ready, Hits: p.hits.Load(), Misses: p.misses.Load()}
}

// counts records whether a run that could use the pool got a container.
func (p *warmPool) counts(key string, hit bool) {
	if p == nil || key == "" {
		return
	}
	if hit {
		p.hits.Add(1)
	} else {
		p.misses.Add(1)
	}
}
