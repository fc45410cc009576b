package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// settleTimeout bounds the wait for a runner's background work.
const settleTimeout = 2 * time.Minute

func settle(ctx context.Context, m method) error {
	if m.settle == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	return m.settle(ctx)
}

// measureLatency runs every method twice unmeasured (caches, the pool),
// then n rounds, each method once per round in a rotating order so that no
// method always follows the same one.
func measureLatency(ctx context.Context, methods []method, n int) ([][]time.Duration, error) {
	for _, m := range methods {
		for range 2 {
			if _, err := m.run(ctx); err != nil {
				return nil, err
			}
			if err := settle(ctx, m); err != nil {
				return nil, err
			}
		}
	}
	lat := make([][]time.Duration, len(methods))
	for i := range n {
		for j := range methods {
			k := (i + j) % len(methods)
			d, err := methods[k].run(ctx)
			if err != nil {
				return nil, err
			}
			if err := settle(ctx, methods[k]); err != nil {
				return nil, err
			}
			lat[k] = append(lat[k], d)
		}
	}
	return lat, nil
}

// throughputMethod measures executions per second at a concurrency.
type throughputMethod struct {
	name    string
	measure func(ctx context.Context, conc, total int) (float64, error)
}

func (b *bench) throughputMethods() []throughputMethod {
	ms := []throughputMethod{
		{"docker run --rm -i", func(ctx context.Context, conc, total int) (float64, error) {
			return rate(ctx, conc, total, method{run: b.dockerRun})
		}},
		{"engine floor: /bin/true, create+start+rm", func(ctx context.Context, conc, total int) (float64, error) {
			return rate(ctx, conc, total, method{run: b.engineFloor})
		}},
		{"library, cold", b.libraryRate(0)},
		{"library, warm pool (size = concurrency)", b.libraryRate(1)},
	}
	if b.cfg.ociState != "" {
		ms = append(ms, throughputMethod{b.ociName("cold"), b.ociRate(0)},
			throughputMethod{b.ociName("warm (size = c)"), b.ociRate(1)})
	}
	return ms
}

// libraryRate measures a fresh runner per concurrency, with a warm pool of
// poolPerWorker containers per worker. Each worker runs once unmeasured,
// which also fills the pool.
func (b *bench) libraryRate(poolPerWorker int) func(context.Context, int, int) (float64, error) {
	return func(ctx context.Context, conc, total int) (float64, error) {
		d, err := newRunner(b.cfg, conc, poolPerWorker*conc)
		if err != nil {
			return 0, err
		}
		defer d.Close()
		m := method{run: b.library(d), settle: d.WaitIdle}
		if _, err := parallel(ctx, conc, conc, m.run); err != nil {
			return 0, err
		}
		if err := settle(ctx, m); err != nil {
			return 0, err
		}
		return rate(ctx, conc, total, m)
	}
}

// rate runs total executions with conc workers and returns executions per
// second, counting the method's background work until it has settled.
func rate(ctx context.Context, conc, total int, m method) (float64, error) {
	total = max(total, 4*conc)
	start := time.Now()
	if _, err := parallel(ctx, conc, total, m.run); err != nil {
		return 0, err
	}
	if err := settle(ctx, m); err != nil {
		return 0, err
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

func parallel(ctx context.Context, conc, total int, f func(context.Context) (time.Duration, error)) (time.Duration, error) {
	jobs := make(chan struct{}, total)
	for range total {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for range jobs {
				if _, err := f(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// probeReport is what the RSS probe prints.
type probeReport struct {
	RSSKB  int64 `json:"rss_kb"`
	PeakKB int64 `json:"peak_kb"`
	Runs   int   `json:"runs"`
}

// runProbe starts this program again as the RSS probe: a process that is
// nothing but a library runner with a warm pool, so its memory is the
// library's and not the benchmark's.
func runProbe(ctx context.Context, cfg config, pool int) (probeReport, error) {
	self, err := os.Executable()
	if err != nil {
		return probeReport{}, err
	}
	cmd := exec.CommandContext(ctx, self, "-rss-probe", strconv.Itoa(pool), "-image", cfg.image, "-oci-runtime", cfg.runtime)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return probeReport{}, fmt.Errorf("rss probe: %w: %s", err, stderr.String())
	}
	var r probeReport
	if err := json.Unmarshal(out, &r); err != nil {
		return probeReport{}, fmt.Errorf("rss probe: %w: %q", err, out)
	}
	return r, nil
}

// rssProbe runs 2×pool warm executions one after the other and reports
// this process's resident set while the pool is full.
func rssProbe(ctx context.Context, cfg config, out io.Writer) error {
	b := &bench{cfg: cfg}
	defer b.close()
	if err := b.writeSkill(); err != nil {
		return err
	}
	d, err := newRunner(cfg, cfg.rssPool, cfg.rssPool)
	if err != nil {
		return err
	}
	defer d.Close()
	runs := 2 * cfg.rssPool
	for range runs {
		if _, err := b.library(d)(ctx); err != nil {
			return err
		}
		if err := settle(ctx, method{settle: d.WaitIdle}); err != nil {
			return err
		}
	}
	rss, peak, err := memoryOfSelf()
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(probeReport{RSSKB: rss, PeakKB: peak, Runs: runs})
}

// memoryOfSelf reads VmRSS and VmHWM (KiB) from /proc/self/status.
func memoryOfSelf() (rss, peak int64, err error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, perr := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss, err = n, perr
		case "VmHWM":
			peak, err = n, perr
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc/self/status")
	}
	return rss, peak, nil
}
