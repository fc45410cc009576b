// Command bench compares sandboxrun's latency with `docker run --rm -i`
// running the same image with the same mounts, limits and job, interleaved
// in one process, and measures throughput at a fixed concurrency.
//
//	go run ./bench -n 30
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/frame"
)

const script = `import json, sys
args = json.load(sys.stdin)
print(json.dumps({"hello": args["name"]}))
`

type config struct {
	n           int
	concurrency int
	image       string
	// ociRuntime runs every method under an engine runtime (runsc for
	// gVisor); empty is the engine's default.
	ociRuntime string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 30, "executions per method for the latency comparison")
	flag.IntVar(&cfg.concurrency, "c", 4, "concurrency for the throughput measurement")
	flag.StringVar(&cfg.image, "image", sandboxrun.RunnerImage(), "runner image")
	flag.StringVar(&cfg.ociRuntime, "runtime", "", "engine runtime for every method, e.g. runsc (gVisor; `make runsc` registers it)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.n < 1 || cfg.concurrency < 1 {
		return fmt.Errorf("-n and -c must be at least 1")
	}
	skill, err := writeSkill()
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(skill))

	cold, err := sandbox.NewDocker(sandbox.WithVersion(sandboxrun.Version), sandbox.WithDefaultImage(cfg.image),
		sandbox.WithMaxConcurrent(cfg.concurrency), sandbox.WithOCIRuntime(cfg.ociRuntime))
	if err != nil {
		return err
	}
	defer cold.Close()
	warm, err := sandbox.NewDocker(sandbox.WithVersion(sandboxrun.Version), sandbox.WithDefaultImage(cfg.image),
		sandbox.WithMaxConcurrent(cfg.concurrency), sandbox.WithWarmPool(cfg.concurrency, time.Minute), sandbox.WithOCIRuntime(cfg.ociRuntime))
	if err != nil {
		return err
	}
	defer warm.Close()
	if err := cold.Ping(ctx); err != nil {
		return err
	}
	if _, err := cold.CheckImage(ctx, cfg.image); err != nil {
		return err
	}
	b := &bench{skill: skill, image: cfg.image, ociRuntime: cfg.ociRuntime}
	methods := []method{
		{"sandboxrun, warm pool", b.library(warm)},
		{"sandboxrun, cold", b.library(cold)},
	}
	if cfg.ociRuntime != "" {
		// The same cold run under the engine's default runtime, interleaved
		// with the others, is what the runtime costs on this host now.
		plain, err := sandbox.NewDocker(sandbox.WithVersion(sandboxrun.Version), sandbox.WithDefaultImage(cfg.image),
			sandbox.WithMaxConcurrent(cfg.concurrency))
		if err != nil {
			return err
		}
		defer plain.Close()
		methods = append(methods, method{"cold, default runtime", b.library(plain)})
	}
	methods = append(methods, method{"docker run --rm -i", b.cli}) // last: the ratios' reference

	fmt.Fprintf(out, "sandboxrun bench: %d interleaved executions per method of a trivial Python script\n", cfg.n)
	fmt.Fprintf(out, "image %s, %d CPUs, same mounts, limits, hardening and job for every method\n", cfg.image, runtime.NumCPU())
	if cfg.ociRuntime != "" {
		fmt.Fprintf(out, "engine runtime: %s\n", cfg.ociRuntime)
	}
	fmt.Fprintln(out)
	for _, m := range methods { // warm caches (and the pool); not counted
		for range 2 {
			if _, err := m.run(ctx); err != nil {
				return err
			}
		}
	}
	lat := make([][]time.Duration, len(methods))
	for i := range cfg.n {
		// Rotate the order so no method always follows the same one.
		for j := range methods {
			k := (i + j) % len(methods)
			dur, err := methods[k].run(ctx)
			if err != nil {
				return err
			}
			lat[k] = append(lat[k], dur)
		}
	}
	fmt.Fprintf(out, "latency, sequential:\n")
	cliP50 := stats.Percentile(lat[len(methods)-1], 50)
	for i, m := range methods {
		p50 := stats.Percentile(lat[i], 50)
		fmt.Fprintf(out, "  %-24s p50 %7s  p95 %7s  p50 ratio to docker run %.2f\n",
			m.name, stats.MS(p50), stats.MS(stats.Percentile(lat[i], 95)), float64(p50)/float64(cliP50))
	}

	total := max(cfg.n, 4*cfg.concurrency)
	fmt.Fprintf(out, "throughput, %d executions at concurrency %d:\n", total, cfg.concurrency)
	for _, m := range methods {
		elapsed, err := throughput(ctx, total, cfg.concurrency, m.run)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %-24s %6.2f executions/s  (%s)\n", m.name, float64(total)/elapsed.Seconds(), elapsed.Round(time.Millisecond))
	}
	return nil
}

type method struct {
	name string
	run  func(context.Context) (time.Duration, error)
}

type bench struct {
	skill      string
	image      string
	ociRuntime string
	seq        sync.Mutex
	n          int
}

func limits() policy.Limits {
	return policy.Limits{Timeout: 30 * time.Second, MemoryBytes: 256 << 20, CPUs: 1, Pids: 128,
		OutputBytes: 1 << 20, TmpBytes: 16 << 20}
}

func (b *bench) spec() sandbox.Spec {
	return sandbox.Spec{
		Skill:    "bench",
		SkillDir: b.skill,
		Argv:     []string{"python3", "/skills/bench/scripts/hello.py"},
		Runtime:  "python3",
		Stdin:    []byte(`{"name": "bench"}`),
		Limits:   limits(),
	}
}

func (b *bench) library(d *sandbox.Docker) func(context.Context) (time.Duration, error) {
	return func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		res, err := d.Run(ctx, b.spec())
		elapsed := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("library run: %w", err)
		}
		if !res.Success {
			return 0, fmt.Errorf("library run failed: %s: %s", res.Error, res.Stderr)
		}
		return elapsed, nil
	}
}

// cli runs the same container with the Docker CLI: same image, user,
// mounts, limits and hardening, and the same job on stdin.
func (b *bench) cli(ctx context.Context) (time.Duration, error) {
	spec := b.spec()
	l := spec.Limits
	job, err := json.Marshal(frame.Job{
		Argv: spec.Argv, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
		Dir: "/workspace", Stdin: spec.Stdin, TimeoutMS: l.Timeout.Milliseconds(), GraceMS: 2000, OutputCap: l.OutputBytes,
	})
	if err != nil {
		return 0, err
	}
	b.seq.Lock()
	b.n++
	name := fmt.Sprintf("sandboxrun-bench-%d-%d", os.Getpid(), b.n)
	b.seq.Unlock()
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	args := []string{"run", "--rm", "-i", "--name", name,
		"--label", sandbox.LabelManaged + "=true", "--label", sandbox.LabelOwnerPID + "=" + strconv.Itoa(os.Getpid()),
		"--user", "65532:65532", "--read-only", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--ipc", "private", "--cgroupns", "private",
		"--memory", mem, "--memory-swap", mem, "--cpus", "1", "--pids-limit", strconv.FormatInt(l.Pids, 10),
		"--ulimit", "core=0:0", "--ulimit", "nofile=1024:4096", "--log-driver", "none",
		"--shm-size", strconv.FormatInt(l.TmpBytes, 10),
		"--tmpfs", fmt.Sprintf("/tmp:rw,nosuid,nodev,size=%d,mode=1777", l.TmpBytes),
		"--mount", "type=bind,src=" + b.skill + ",dst=/skills/bench,readonly,bind-propagation=rprivate,bind-nonrecursive",
		b.image}
	if b.ociRuntime != "" {
		args = append(args[:len(args)-1], "--runtime", b.ociRuntime, b.image)
	}
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdin = bytes.NewReader(job)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("docker run: %w: %s", err, stderr.String())
	}
	if !bytes.Contains(stdout.Bytes(), []byte(`"exit_code":0`)) {
		return 0, fmt.Errorf("docker run: the script failed: %q", stdout.String())
	}
	return elapsed, nil
}

func throughput(ctx context.Context, total, conc int, f func(context.Context) (time.Duration, error)) (time.Duration, error) {
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

// writeSkill writes the benchmark's skill. It must be world-readable: the
// sandbox runs as an unprivileged uid, not as the caller.
func writeSkill() (string, error) {
	root, err := os.MkdirTemp("", "sandboxrun-bench-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bench")
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	for _, p := range []string{root, dir, filepath.Join(dir, "scripts")} {
		if err := os.Chmod(p, 0o755); err != nil { //nolint:gosec // read by the sandbox user
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "hello.py"), []byte(script), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	return dir, nil
}
