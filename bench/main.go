// Command bench measures sandboxrun's latency, throughput and memory against
// the Docker CLI on the same engine, in the same run: `docker run --rm -i`
// of the same image with the same mounts, limits, hardening and job, and
// `docker exec -i` into a running container of that image (the floor a
// warm sandbox is compared with).
//
//	go run ./bench -n 50 -c 1,2,8 -cli bin/sandboxrun
//
// Latency samples are sequential and interleaved (each round runs every
// method once, in a rotating order), and the runners' background work
// (teardown, warm refills) is waited for between samples, so no method's
// sample pays for another's. Throughput runs a fixed number of executions
// at each concurrency and counts the background work until it is done;
// its engine floor row (a hardened container running /bin/true, created,
// started, waited for and removed through the API) is the ceiling the
// engine sets for any runner that uses one container per execution.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
)

type config struct {
	n       int   // latency samples per method
	total   int   // executions per throughput measurement
	levels  []int // concurrencies for throughput
	image   string
	cli     string // the sandboxrun binary; empty skips the CLI rows
	runtime string // engine runtime for every method; empty: the engine's default
	// sections to run: latency, throughput, memory
	sections map[string]bool
	// rows: substrings naming the throughput rows to run; empty runs all
	rows    []string
	rssPool int // internal: run as the RSS probe with a pool of this size
	// usrVolumes: sandboxrun's sandboxes mount their image's usr volume
	// (fuse-overlayfs engines only; docker.WithUsrVolumes)
	usrVolumes bool
	// ociState: the oci backend's state folder; empty skips its rows
	ociState string
}

func main() {
	var cfg config
	var levels, only, rows string
	flag.IntVar(&cfg.n, "n", 30, "latency samples per method")
	flag.IntVar(&cfg.total, "t", 0, "executions per throughput measurement (default: -n, at least 4 per worker)")
	flag.StringVar(&levels, "c", "1,2,8", "comma-separated concurrencies for the throughput table")
	flag.StringVar(&cfg.image, "image", sandboxrun.RunnerImage(), "runner image")
	flag.StringVar(&cfg.cli, "cli", "", "sandboxrun binary for the CLI rows (e.g. bin/sandboxrun); empty skips them")
	flag.StringVar(&cfg.runtime, "oci-runtime", "", "engine runtime for every method, e.g. crun (see make crun); default: the engine's")
	flag.BoolVar(&cfg.usrVolumes, "usr-volumes", true, "sandboxrun's rows mount the image's usr volume on a fuse-overlayfs engine (false: read /usr through the storage driver)")
	flag.StringVar(&cfg.ociState, "oci-state", "", "state folder of the oci backend's rows (root, runc; the runner image is unpacked there once); empty skips them")
	flag.StringVar(&only, "only", "latency,throughput,memory", "comma-separated sections to run")
	flag.StringVar(&rows, "rows", "", "comma-separated substrings: run only the throughput rows whose name has one (e.g. cold,floor); default all")
	flag.IntVar(&cfg.rssPool, "rss-probe", 0, "internal: report this process's memory as a library with a warm pool of this size")
	flag.Parse()
	if rows != "" {
		cfg.rows = strings.Split(rows, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if cfg.rssPool > 0 {
		err = rssProbe(ctx, cfg, os.Stdout)
	} else if cfg.levels, err = parseLevels(levels); err == nil {
		if cfg.sections, err = parseSections(only); err == nil {
			err = run(ctx, cfg, os.Stdout)
		}
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-c %q: give concurrencies of at least 1, separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseSections(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for f := range strings.SplitSeq(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case "latency", "throughput", "memory":
			out[f] = true
		default:
			return nil, fmt.Errorf("-only %q: give latency, throughput and/or memory, separated by commas", s)
		}
	}
	return out, nil
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.n < 1 {
		return fmt.Errorf("-n must be at least 1")
	}
	if cfg.total == 0 {
		cfg.total = cfg.n
	}
	if cfg.cli != "" {
		abs, err := filepath.Abs(cfg.cli)
		if err != nil {
			return err
		}
		cfg.cli = abs
	}
	if err := checkRows(cfg.rows); err != nil {
		return err
	}
	b, err := newBench(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.close()

	runtimeName := cfg.runtime
	if runtimeName == "" {
		runtimeName = "the engine's default"
	}
	fmt.Fprintf(out, "sandboxrun bench: trivial Python script (reads JSON args, prints JSON), image %s, runtime %s, usr volumes %s\n", cfg.image, runtimeName, onOff(cfg.usrVolumes))
	fmt.Fprintf(out, "%d CPUs, load average at start %s; same mounts, limits, hardening and job for every method\n\n", runtime.NumCPU(), loadAverage())

	if cfg.sections["latency"] {
		methods := b.latencyMethods()
		lat, err := measureLatency(ctx, methods, cfg.n)
		if err != nil {
			return err
		}
		printLatency(out, methods, lat, cfg.n)
	}
	if cfg.sections["throughput"] {
		if err := printThroughput(ctx, out, b); err != nil {
			return err
		}
	}
	if cfg.sections["memory"] {
		if err := printMemory(ctx, out, b); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nload average at end %s\n", loadAverage())
	return nil
}

func printThroughput(ctx context.Context, out io.Writer, b *bench) error {
	fmt.Fprintf(out, "\nthroughput, executions/s (%d executions per cell, background teardown included):\n", b.cfg.total)
	fmt.Fprintf(out, "  %-40s", "method")
	for _, c := range b.cfg.levels {
		fmt.Fprintf(out, " %8s", "c="+strconv.Itoa(c))
	}
	fmt.Fprintln(out)
	for _, tm := range b.throughputMethods() {
		if !selected(tm.name, b.cfg.rows) {
			continue
		}
		fmt.Fprintf(out, "  %-40s", tm.name)
		for _, c := range b.cfg.levels {
			rate, err := tm.measure(ctx, c, b.cfg.total)
			if err != nil {
				return fmt.Errorf("%s at concurrency %d: %w", tm.name, c, err)
			}
			fmt.Fprintf(out, " %8.2f", rate)
		}
		fmt.Fprintln(out)
	}
	return nil
}

// checkRows refuses a -rows that names no throughput row, before anything
// is measured.
func checkRows(rows []string) error {
	var names []string
	for _, tm := range (&bench{}).throughputMethods() {
		if selected(tm.name, rows) {
			return nil
		}
		names = append(names, tm.name)
	}
	return fmt.Errorf("-rows %s names no throughput row; the rows are: %s", strings.Join(rows, ","), strings.Join(names, "; "))
}

// selected reports whether a row's name has one of rows in it (any, when
// rows is empty).
func selected(name string, rows []string) bool {
	if len(rows) == 0 {
		return true
	}
	for _, r := range rows {
		if strings.Contains(name, r) {
			return true
		}
	}
	return false
}

func printMemory(ctx context.Context, out io.Writer, b *bench) error {
	fmt.Fprintf(out, "\nmemory:\n")
	if b.cfg.cli != "" {
		for len(b.cliRSS) < 5 { // when the latency section did not run it
			if _, err := b.cliRun(ctx); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "  %-40s %s (median peak RSS of %d `sandboxrun run` processes)\n", "CLI", mib(stats.MedianInt(b.cliRSS)), len(b.cliRSS))
	}
	probe, err := runProbe(ctx, b.cfg, 4)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  %-40s %s RSS, %s peak (after %d warm runs)\n", "library, warm pool of 4", mib(probe.RSSKB), mib(probe.PeakKB), probe.Runs)
	return nil
}

func printLatency(out io.Writer, methods []method, lat [][]time.Duration, n int) {
	fmt.Fprintf(out, "latency, sequential, %d samples per method (p99 of fewer than 100 samples is the maximum):\n", n)
	fmt.Fprintf(out, "  %-40s %8s %8s %8s %10s\n", "method", "p50", "p90", "p99", "p50 ratio")
	base := stats.Percentile(lat[0], 50) // docker run comes first
	for i, m := range methods {
		p50 := stats.Percentile(lat[i], 50)
		fmt.Fprintf(out, "  %-40s %8s %8s %8s %9.2fx\n", m.name, stats.MS(p50),
			stats.MS(stats.Percentile(lat[i], 90)), stats.MS(stats.Percentile(lat[i], 99)), float64(p50)/float64(base))
	}
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

// loadAverage is the host's 1, 5 and 15 minute load, for judging noise
// from other work on the machine.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
