package docker

import "github.com/sandboxrun/sandboxrun/sandbox"

// PoolStats returns the warm pool's figures; all zero when it is off.
func (d *Runner) PoolStats() sandbox.PoolStats {
	if d.pool == nil {
		return sandbox.PoolStats{}
	}
	s := d.pool.Stats()
	return sandbox.PoolStats{Size: s.Size, Ready: s.Ready, Hits: s.Hits, Misses: s.Misses}
}
