// Command livemetrics measures what live usage samples cost a run: the
// same runs through one Service, alternating between no samples and a
// sample every second (the events a stream would carry, counted), for a
// short script and for one that keeps a core busy for -work. It prints
// p50 and p95 of each mode and the ratio on/off of p50, per backend. With
// -reads it also times one read of a running container's use through the
// cgroup's files and through the engine's one-shot stats.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends/dockerbackend"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
)

type config struct {
	n        int
	work     time.Duration
	skills   string
	backends []string
	reads    int
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 10, "runs per row and mode")
	flag.DurationVar(&cfg.work, "work", 3*time.Second, "how long the busy script keeps a core busy")
	flag.StringVar(&cfg.skills, "skills", "skills", "skills root (the hello skill is run)")
	oci := flag.Bool("oci", false, "also measure the oci backend (root and runc)")
	flag.IntVar(&cfg.reads, "reads", 200, "reads of a container's use to time per way (0: none)")
	flag.Parse()
	cfg.backends = []string{"docker"}
	if *oci {
		cfg.backends = append(cfg.backends, "oci")
	}
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench/livemetrics:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	fmt.Printf("bench/livemetrics: %d runs per cell, samples every 1s when on, busy script %s\n", cfg.n, cfg.work)
	fmt.Printf("%-7s %-6s %-4s %8s %8s %8s\n", "backend", "script", "live", "p50", "p95", "samples")
	for _, backend := range cfg.backends {
		svc, err := service(ctx, cfg, backend)
		if err != nil {
			return err
		}
		err = rows(ctx, cfg, backend, svc)
		svc.Close()
		if err != nil {
			return err
		}
	}
	if cfg.reads > 0 {
		return timeReads(ctx, cfg.reads)
	}
	return nil
}

func service(ctx context.Context, cfg config, backend string) (*sandboxrun.Service, error) {
	c := sandboxrun.Config{SkillRoots: []string{cfg.skills}, Images: dockerbackend.Images()}
	switch backend {
	case "docker":
		c.Backend = dockerbackend.New
	case "oci":
		r, err := oci.New(oci.WithVersion(sandboxrun.Version), oci.WithDefaultImage(sandboxrun.RunnerImage()))
		if err != nil {
			return nil, err
		}
		if _, err := r.ImportFromEngine(ctx, sandboxrun.RunnerImage()); err != nil {
			_ = r.Close()
			return nil, err
		}
		c.Runner = r
	}
	return sandboxrun.New(c)
}

// rows measures the short and the busy script, modes alternating run by
// run so that both see the same machine.
func rows(ctx context.Context, cfg config, backend string, svc *sandboxrun.Service) error {
	busy := fmt.Sprintf("import time\nend = time.time() + %g\nwhile time.time() < end:\n    pass\n", cfg.work.Seconds())
	for _, script := range []string{"short", "busy"} {
		lat := map[bool][]time.Duration{}
		var samples atomic.Int64
		for i := range 2*cfg.n + 2 {
			live := i%2 == 1
			req := sandboxrun.Request{Args: []byte(`{"name":"bench"}`)}
			if live {
				req.UsageEvery, req.Usage = time.Second, func(sandbox.Usage) { samples.Add(1) }
			}
			began := time.Now()
			var res *sandbox.Result
			var err error
			if script == "short" {
				res, err = svc.RunScript(ctx, "hello", "scripts/echo.py", req)
			} else {
				req.Args = nil
				res, err = svc.RunPython(ctx, "hello", []byte(busy), req)
			}
			d := time.Since(began)
			if err != nil {
				return err
			}
			if !res.Success {
				return fmt.Errorf("%s run failed: %s %s", script, res.Error, res.Stderr)
			}
			if i >= 2 { // the first of each mode warms the image
				lat[live] = append(lat[live], d)
			}
		}
		for _, live := range []bool{false, true} {
			mode, n := "off", "-"
			if live {
				mode, n = "1s", fmt.Sprintf("%.1f/run", float64(samples.Load())/float64(cfg.n+1))
			}
			fmt.Printf("%-7s %-6s %-4s %8s %8s %8s\n", backend, script, mode,
				stats.MS(stats.Percentile(lat[live], 50)), stats.MS(stats.Percentile(lat[live], 95)), n)
		}
		fmt.Printf("%-7s %-6s ratio 1s/off p50 %.3f\n", backend, script,
			float64(stats.Percentile(lat[true], 50))/float64(stats.Percentile(lat[false], 50)))
	}
	return nil
}

// errNoCgroup: the engine runs elsewhere (or under another parent).
var errNoCgroup = errors.New("the container's cgroup is not on this host")
