package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/sandboxrun/sandboxrun/policy"
)

// warmFlags are --warm-pool and --warm-idle, which serve and mcp share:
// both keep a warm pool by default, sized by demand.
type warmFlags struct {
	max  int
	idle time.Duration
	fs   *pflag.FlagSet
}

func addWarmFlags(fs *pflag.FlagSet) *warmFlags {
	w := &warmFlags{fs: fs}
	fs.IntVar(&w.max, "warm-pool", policy.DefaultWarmPoolMax, "containers kept started ahead of runs, in all; each configuration run lately gets a share by its recent demand (0: off; when not given, the policy's docker.warm_pool.max, else this default)")
	fs.DurationVar(&w.idle, "warm-idle", policy.DefaultWarmIdle, "a configuration not run for this long keeps no warm container (when not given, the policy's docker.warm_pool.idle, else this default)")
	return w
}

// resolve is the pool's cap and idle window: each flag given wins, else
// the policy's docker.warm_pool, else the defaults.
func (w *warmFlags) resolve(pol *policy.Operator) (int, time.Duration, error) {
	max, idle := w.max, w.idle
	if !w.fs.Changed("warm-pool") {
		max = pol.Docker.WarmPool.MaxOrDefault()
	}
	if !w.fs.Changed("warm-idle") {
		idle = pol.Docker.WarmPool.IdleOrDefault()
	}
	if max < 0 || max > policy.MaxWarm {
		return 0, 0, usageError("--warm-pool %d: use 0 (off) to %d containers", max, policy.MaxWarm)
	}
	if idle <= 0 || idle > policy.MaxWarmIdle {
		return 0, 0, usageError("--warm-idle %s: use a positive duration of at most %s", idle, policy.MaxWarmIdle)
	}
	return max, idle, nil
}
