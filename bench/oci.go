package main

import (
	"context"
	"fmt"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
)

// The oci backend's rows: the same script, skill and limits, run by
// sandbox/oci driving the OCI runtime directly, no engine per run. The
// runner image is unpacked once (from the engine) before any is measured.

// newOCIRunner is an oci runner with at most conc executions at once.
func newOCIRunner(ctx context.Context, cfg config, conc int) (*oci.Runner, error) {
	rt := cfg.runtime
	if rt == "" {
		rt = "runc"
	}
	r, err := oci.New(oci.WithVersion(sandboxrun.Version), oci.WithDefaultImage(cfg.image),
		oci.WithMaxConcurrent(conc), oci.WithRuntime(rt), oci.WithState(cfg.ociState))
	if err != nil {
		return nil, fmt.Errorf("oci backend: %w", err)
	}
	if _, err := r.ImportFromEngine(ctx, cfg.image); err != nil {
		return nil, fmt.Errorf("oci backend: %w", err)
	}
	return r, nil
}

func (b *bench) ociName() string {
	if b.cfg.runtime == "" {
		return "oci backend (runc), cold"
	}
	return "oci backend (" + b.cfg.runtime + "), cold"
}

// ociRate measures a fresh oci runner per concurrency.
func (b *bench) ociRate(ctx context.Context, conc, total int) (float64, error) {
	r, err := newOCIRunner(ctx, b.cfg, conc)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return rate(ctx, conc, total, method{run: b.library(r)})
}
