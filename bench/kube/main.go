// Command kube measures the Kubernetes backend next to the Docker one in
// the same run: latency (p50, p90) of one execution at a time, and
// executions per second at concurrency 1 and 4, every sandbox cold (no
// warm pool on either side). make bench-k8s runs it on a test cluster.
//
//	SANDBOXRUN_KUBECONFIG=... go run ./bench/kube -n 20
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

const script = `import json, sys
args = json.load(sys.stdin)
print(json.dumps({"hello": args["name"]}))
`

func main() {
	n := flag.Int("n", 20, "executions per backend and concurrency")
	ns := flag.String("namespace", envOr("SANDBOXRUN_K8S_NAMESPACE", "sandboxrun"), "namespace of the sandbox pods")
	kc := flag.String("kubeconfig", os.Getenv("SANDBOXRUN_KUBECONFIG"), "kubeconfig of the cluster")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *n, *kc, *ns, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/kube:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, n int, kubeconfig, namespace string, out io.Writer) error {
	if n < 1 || kubeconfig == "" {
		return errors.New("-n must be at least 1 and -kubeconfig (or SANDBOXRUN_KUBECONFIG) set")
	}
	dir, err := os.MkdirTemp("", "bench-kube-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the sandbox user reads the skill
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil { //nolint:gosec // as above
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "hello.py"), []byte(script), 0o644); err != nil { //nolint:gosec // as above
		return err
	}

	docker, err := docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(sandboxrun.RunnerImage()))
	if err != nil {
		return err
	}
	defer docker.Close()
	cfg, err := kube.RESTConfig(kubeconfig)
	if err != nil {
		return err
	}
	k, err := kube.New(kube.WithRESTConfig(cfg), kube.WithNamespace(namespace), kube.WithVersion(sandboxrun.Version),
		kube.WithDefaultImage(sandboxrun.RunnerImage()), kube.WithMaxConcurrent(8))
	if err != nil {
		return err
	}
	// The network proof is a one-time cost of the runner, not of a run.
	if err := k.CheckNetwork(ctx); err != nil {
		return err
	}
	backends := []struct {
		name string
		r    sandbox.Runner
	}{{"docker", docker}, {"kubernetes", k}}

	fmt.Fprintf(out, "%d cold executions of a Python script per row, %d CPUs\n\n", n, runtime.NumCPU())
	fmt.Fprintf(out, "%-11s %5s %8s %8s %8s\n", "backend", "conc", "p50", "p90", "runs/s")
	for _, c := range []int{1, 4} {
		for _, b := range backends {
			lat, wall, err := measure(ctx, b.r, dir, n, c)
			if err != nil {
				return fmt.Errorf("%s at concurrency %d: %w", b.name, c, err)
			}
			fmt.Fprintf(out, "%-11s %5d %8s %8s %8.2f\n", b.name, c,
				stats.MS(stats.Percentile(lat, 50)), stats.MS(stats.Percentile(lat, 90)), float64(n)/wall.Seconds())
		}
	}
	return nil
}

// limits are the Docker bench's: small and quick.
func limits() policy.Limits {
	return policy.Limits{Timeout: 30 * time.Second, MemoryBytes: 256 << 20, CPUs: 1, Pids: 128,
		OutputBytes: 1 << 20, TmpBytes: 16 << 20}
}

// measure runs n executions with c workers and returns each one's latency
// and the wall time of all.
func measure(ctx context.Context, r sandbox.Runner, skillDir string, n, c int) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				res, err := r.Run(ctx, sandbox.Spec{
					Skill: "bench", SkillDir: skillDir, Runtime: "python3",
					Argv:   []string{"python3", "/skills/bench/scripts/hello.py"},
					Stdin:  []byte(`{"name": "bench"}`),
					Limits: limits(),
				})
				lat[i] = time.Since(t)
				switch {
				case err != nil:
					errs[i] = err
				case !res.Success:
					errs[i] = fmt.Errorf("run %d failed: %s %s", i, res.Error, res.Stderr)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return lat, time.Since(began), errors.Join(errs...)
}
