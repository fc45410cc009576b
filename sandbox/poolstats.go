package sandbox

// PoolStats describe the warm pool, for metrics.
type PoolStats struct {
	// Size is the configured size, or cap when sized by demand (0: off);
	// Ready the containers idle or starting now.
	Size, Ready int
	// Hits and Misses count the runs that could use the pool and got a
	// warm container, or did not and started a cold one.
	Hits, Misses uint64
}
