// Command server measures `sandboxrun serve` as an agent host sees it:
// latency (p50, p99) and executions per second at several concurrencies,
// with the warm pool off and as it is by default (sized by demand), next
// to `docker run --rm -i` on the same image measured in the same run, the
// server's memory idle and under load, and what the default pool holds
// after a burst and after its idle window. Then `sandboxrun mcp` over
// stdio with its defaults, one call at a time as an agent makes them. Every
// row after the first run of its server: the second and later runs.
// Traffic goes to loopback only.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/internal/testserve"
)

const script = "import json, sys\nprint(json.dumps({'hello': json.load(sys.stdin)}))\n"

func main() {
	n := flag.Int("n", 30, "requests per measurement")
	bin := flag.String("bin", "bin/sandboxrun", "the sandboxrun binary")
	flag.StringVar(&only, "only", "", "measure only the rows whose name contains this (docker run always)")
	flag.StringVar(&ociState, "oci-state", "", "also measure MCP stdio on the oci backend with a warm pool, its images unpacked into this folder (root; empty: skip)")
	flag.Parse()
	if err := run(*bin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

// only limits the rows measured (-only); ociState is the oci backend's
// state folder (-oci-state), empty to skip its rows.
var (
	only     string
	ociState string
)

func run(bin string, n int) error {
	root, err := writeSkill()
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	image := sandboxrun.RunnerImage()
	fmt.Printf("sandboxrun serve bench: n=%d per row, image %s, trivial python script\n\n", n, image)

	base, err := measure(n, 1, func(ctx context.Context) error { return dockerRun(ctx, image) })
	if err != nil {
		return fmt.Errorf("docker run baseline: %w", err)
	}
	fmt.Printf("%-26s %5s %8s %8s %9s %10s\n", "method", "conc", "p50", "p99", "exec/s", "p50/docker")
	row := func(name string, conc int, m result) {
		fmt.Printf("%-26s %5d %8s %8s %9.1f %10.2f\n", name, conc, stats.MS(m.p50), stats.MS(m.p99), m.perSec,
			float64(m.p50)/float64(base.p50))
	}
	row("docker run --rm -i", 1, base)
	for _, pool := range []struct {
		name string
		args []string
	}{
		{"serve, warm pool off", []string{"--warm-pool", "0"}},
		{"serve, default", []string{"--warm-idle", benchIdle.String()}},
	} {
		name := pool.name
		if !strings.Contains(name, only) {
			continue
		}
		srv, err := startServer(bin, root, pool.args...)
		if err != nil {
			return err
		}
		idle, _ := rssKB(srv.cmd.Process.Pid)
		var peak atomic.Int64
		stop := sampleRSS(srv.cmd.Process.Pid, &peak)
		for _, conc := range []int{1, 4, 16} {
			m, err := measure(max(n, conc*2), conc, srv.run)
			if err != nil {
				stop()
				srv.stop()
				return fmt.Errorf("%s at concurrency %d: %w", name, conc, err)
			}
			row(name, conc, m)
		}
		if pool.args[0] != "--warm-pool" {
			m, err := measurePaced(n, 1, thinkTime, srv.run)
			if err != nil {
				stop()
				srv.stop()
				return fmt.Errorf("%s, paced: %w", name, err)
			}
			row(name+", 1s apart", 1, m)
		}
		stop()
		fmt.Printf("%-26s RSS idle %d MiB, peak under load %d MiB\n", "", idle>>10, peak.Load()>>10)
		if pool.args[0] != "--warm-pool" {
			idleCost(name, srv.cmd.Process.Pid)
		}
		srv.stop()
	}

	if !strings.Contains("mcp stdio, default", only) {
		return nil
	}
	m, err := startMCP(bin, root, "--warm-idle", benchIdle.String())
	if err != nil {
		return err
	}
	defer m.stop()
	if err := m.run(context.Background()); err != nil { // the first, cold
		return fmt.Errorf("mcp stdio: %w", err)
	}
	r, err := measure(n, 1, m.run)
	if err != nil {
		return fmt.Errorf("mcp stdio: %w", err)
	}
	row("mcp stdio, default", 1, r)
	if r, err = measurePaced(n, 1, thinkTime, m.run); err != nil {
		return fmt.Errorf("mcp stdio, paced: %w", err)
	}
	row("mcp stdio, default, 1s apart", 1, r)
	idleCost("mcp stdio, default", m.cmd.Process.Pid)
	if ociState == "" {
		return nil
	}
	return mcpOCI(bin, root, n, row)
}

type result struct {
	p50, p99 time.Duration
	perSec   float64
}

// measure runs total calls of f, conc at a time.
func measure(total, conc int, f func(context.Context) error) (result, error) {
	return measurePaced(total, conc, 0, f)
}

// thinkTime is the pause between an agent's calls in the "paced" rows: a
// model's turn between two tool calls takes at least this long, so these
// rows show what an agent calling a skill in a loop sees, where the others
// send each call the moment the last one answered.
const thinkTime = time.Second

// measurePaced is measure with pause between one worker's calls; the
// pause is not part of any latency, and exec/s counts it in.
func measurePaced(total, conc int, pause time.Duration, f func(context.Context) error) (result, error) {
	ctx := context.Background()
	jobs := make(chan struct{}, total)
	for range total {
		jobs <- struct{}{}
	}
	close(jobs)
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			first := true
			for range jobs {
				if !first {
					time.Sleep(pause)
				}
				first = false
				t := time.Now()
				err := f(ctx)
				d := time.Since(t)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return result{}, firstErr
	}
	elapsed := time.Since(start)
	return result{p50: stats.Percentile(lat, 50), p99: stats.Percentile(lat, 99), perSec: float64(total) / elapsed.Seconds()}, nil
}

func dockerRun(ctx context.Context, image string) error {
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "-i", "--network", "none", "--user", "65532:65532",
		"--read-only", "--cap-drop", "ALL", "--log-driver", "none", "--entrypoint", "python3", image, "-c", script)
	cmd.Stdin = strings.NewReader(`{"name": "bench"}`)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("hello")) {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

type server struct {
	*testserve.Server
	url string
	cmd *exec.Cmd
}

func startServer(bin, root string, args ...string) (*server, error) {
	srv, err := testserve.Start(testserve.Options{Bin: bin,
		Args: append([]string{"--skills", root, "serve", "--max-running", "16", "--max-queued", "64"}, args...)})
	if err != nil {
		return nil, err
	}
	s := &server{Server: srv, url: srv.URL, cmd: srv.Cmd}
	// One run so images are looked up and, with a pool, the pool has seen
	// the configuration: the rows are of the second and later runs.
	if err := s.run(context.Background()); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) run(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/skills/bench/run",
		strings.NewReader(`{"script": "scripts/hello.py", "args": {"name": "bench"}}`))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var res struct {
		Success bool   `json:"success"`
		Stderr  string `json:"stderr"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &res) != nil || !res.Success {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return nil
}

func (s *server) stop() { s.Stop() }

// rssKB reads a process's resident set from /proc.
func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

// sampleRSS records the highest RSS seen until stop is called.
func sampleRSS(pid int, peak *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if kb, err := rssKB(pid); err == nil && kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// writeSkill writes a one-script skill readable by the sandbox user and
// returns its root.
func writeSkill() (string, error) {
	root, err := os.MkdirTemp("", "sandboxrun-serve-bench-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bench", "scripts")
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	for _, p := range []string{root, filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil { //nolint:gosec // read by the sandbox user
			return "", err
		}
	}
	md := "---\nname: bench\ndescription: Benchmark skill.\nmetadata:\n  max_memory: \"256\"\n---\nBench.\n"
	if err := os.WriteFile(filepath.Join(root, "bench", "SKILL.md"), []byte(md), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	return root, os.WriteFile(filepath.Join(dir, "hello.py"), []byte(script), 0o644) //nolint:gosec // read by the sandbox user
}
