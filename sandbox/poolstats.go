package sandbox

// PoolStats describe the warm pool, for metrics.
type PoolStats struct {
	// Size is the configured size (0: off); Ready the containers idle or
	// starting now.
	Size, Ready int
	// Hits and Misses count the runs that could use the pool and got a
	// warm container, or did not and started a cold one.
	Hits, Misses uint64
}

// PoolStats returns the warm pool's figures; all zero when it is off.
func (d *Docker) PoolStats() PoolStats {
	p := d.pool
	if p == nil {
		return PoolStats{}
	}
	p.mu.Lock()
	ready := p.count
	p.mu.Unlock()
	return PoolStats{Size: p.size, Ready: ready, Hits: p.hits.Load(), Misses: p.misses.Load()}
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
