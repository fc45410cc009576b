package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
)

// The oci backend's rows: the same script, skill and limits, run by
// sandbox/oci driving the OCI runtime directly, no engine per run. The
// runner image is unpacked once (from the engine) before any is measured.

// newOCIRunner is an oci runner with at most conc executions at once and a
// warm pool of pool containers (0: none).
func newOCIRunner(ctx context.Context, cfg config, conc, pool int) (*oci.Runner, error) {
	rt := cfg.runtime
	if rt == "" {
		rt = "runc"
	}
	opts := []oci.Option{oci.WithVersion(sandboxrun.Version), oci.WithDefaultImage(cfg.image),
		oci.WithMaxConcurrent(conc), oci.WithRuntime(rt), oci.WithState(cfg.ociState)}
	if pool > 0 {
		opts = append(opts, oci.WithWarmPool(pool, time.Minute))
	}
	r, err := oci.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("oci backend: %w", err)
	}
	if _, err := r.ImportFromEngine(ctx, cfg.image); err != nil {
		return nil, fmt.Errorf("oci backend: %w", err)
	}
	return r, nil
}

func (b *bench) ociName(how string) string {
	rt := b.cfg.runtime
	if rt == "" {
		rt = "runc"
	}
	return "oci backend (" + rt + "), " + how
}

// ociRate measures a fresh oci runner per concurrency, with a warm pool of
// poolPerWorker containers per worker; each worker runs once unmeasured,
// which also fills the pool.
func (b *bench) ociRate(poolPerWorker int) func(context.Context, int, int) (float64, error) {
	return func(ctx context.Context, conc, total int) (float64, error) {
		r, err := newOCIRunner(ctx, b.cfg, conc, poolPerWorker*conc)
		if err != nil {
			return 0, err
		}
		defer func() { _ = r.Close() }()
		m := method{run: b.library(r), settle: ociSettle(r, poolPerWorker*conc)}
		if _, err := parallel(ctx, conc, conc, m.run); err != nil {
			return 0, err
		}
		if err := settle(ctx, m); err != nil {
			return 0, err
		}
		return rate(ctx, conc, total, m)
	}
}

// ociSettle waits for the teardown of finished runs and until the warm
// pool holds want containers again.
func ociSettle(r *oci.Runner, want int) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := r.WaitIdle(ctx); err != nil {
			return err
		}
		for r.PoolStats().Ready < want {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		return nil
	}
}
