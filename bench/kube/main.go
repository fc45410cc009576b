// Command kube measures the Kubernetes backend next to the Docker one in
// the same run, each cold and with its warm pool: executions per second
// and latency (p50, p90) at concurrency 1 and 4, back to back, then the
// latency of runs spaced out as an agent's calls are, when the pool has
// had time to refill. The rows are interleaved and every row has a runner
// of its own, so a row's pool serves that row's runs only. make bench-k8s
// runs it on the test cluster. Then what the egress proxy and a writable
// session workspace cost on each backend (parity.go).
//
//	SANDBOXRUN_KUBECONFIG=... go run ./bench/kube -n 20
//
// On a cluster whose Pods have eth0 (K8S_PROFILE=podnet), runs without
// network pass only under an enforced deny-all policy: apply one to the
// namespace's sandbox Pods, start a listening Pod, and name it with
// -isolation-targets IP:PORT; the cluster DNS is a target too unless
// -isolation-cluster-dns=false (for a cluster whose DNS is on the node's
// own network, which an enforcer may leave unfiltered). make
// bench-k8s-podnet does all of it (hack/bench-podnet.sh). Each kubernetes
// runner proves isolation once before its first run; the last line says
// how long those proofs took.
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
)

const script = `import json, sys
args = json.load(sys.stdin)
print(json.dumps({"hello": args["name"]}))
`

type options struct {
	n, paced, warm     int
	parityN            int
	gap                time.Duration
	kubeconfig, nspace string
	// isolation: how the kubernetes rows' runners prove a run without
	// network isolated on a cluster whose Pods have eth0 (a Pod network
	// under a deny-all policy): listening targets, and whether the
	// cluster DNS is one.
	targets    string
	clusterDNS bool
	apiServer  bool
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 20, "executions per row of the back-to-back table")
	flag.IntVar(&o.paced, "paced", 10, "executions per row of the spaced-out table")
	flag.DurationVar(&o.gap, "gap", 2*time.Second, "pause between the spaced-out executions")
	flag.IntVar(&o.warm, "warm", 4, "warm pool size of the warm rows")
	flag.IntVar(&o.parityN, "parity-n", 5, "executions per cell of the egress and session tables (0: skip them)")
	flag.StringVar(&o.nspace, "namespace", envOr("SANDBOXRUN_K8S_NAMESPACE", "sandboxrun"), "namespace of the sandbox pods")
	flag.StringVar(&o.targets, "isolation-targets", "", "host:port,... the isolation probe must find closed to sandbox pods (a cluster with a Pod network)")
	flag.BoolVar(&o.clusterDNS, "isolation-cluster-dns", true, "the cluster DNS is an isolation target")
	flag.BoolVar(&o.apiServer, "isolation-api-server", true, "the API server's Service is an isolation target")
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("SANDBOXRUN_KUBECONFIG"), "kubeconfig of the cluster")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout)
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

func run(ctx context.Context, o options, out io.Writer) error {
	if o.n < 1 || o.paced < 1 || o.warm < 1 || o.kubeconfig == "" {
		return errors.New("-n, -paced and -warm must be at least 1 and -kubeconfig (or SANDBOXRUN_KUBECONFIG) set")
	}
	dir, err := skillDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var pf proofs
	rows, err := newRows(ctx, o, &pf)
	if err != nil {
		return err
	}
	defer printProofs(out, &pf)

	fmt.Fprintf(out, "A Python script per execution, %s CPU and %d MiB each, %d CPUs here; warm pools of %d\n\n",
		fmt.Sprint(limits().CPUs), limits().MemoryBytes>>20, runtime.NumCPU(), o.warm)
	fmt.Fprintf(out, "back to back, %d executions per row\n", o.n)
	fmt.Fprintf(out, "%-11s %-5s %5s %8s %8s %8s %10s\n", "backend", "pool", "conc", "p50", "p90", "runs/s", "hits")
	for _, c := range []int{1, 4} {
		for _, r := range rows {
			m, err := r.measure(ctx, dir, o.n, c, 0, false)
			if err != nil {
				return fmt.Errorf("%s %s at concurrency %d: %w", r.backend, r.pool, c, err)
			}
			fmt.Fprintf(out, "%-11s %-5s %5d %8s %8s %8.2f %10s\n", r.backend, r.pool, c,
				stats.MS(stats.Percentile(m.lat, 50)), stats.MS(stats.Percentile(m.lat, 90)),
				float64(o.n)/m.wall.Seconds(), m.hits)
		}
	}
	fmt.Fprintf(out, "\none at a time, %s apart, %d executions per row\n", o.gap, o.paced)
	fmt.Fprintf(out, "%-11s %-5s %8s %8s %10s\n", "backend", "pool", "p50", "p90", "hits")
	for _, r := range rows {
		m, err := r.measure(ctx, dir, o.paced, 1, o.gap, false)
		if err != nil {
			return fmt.Errorf("%s %s spaced out: %w", r.backend, r.pool, err)
		}
		fmt.Fprintf(out, "%-11s %-5s %8s %8s %10s\n", r.backend, r.pool,
			stats.MS(stats.Percentile(m.lat, 50)), stats.MS(stats.Percentile(m.lat, 90)), m.hits)
	}
	// A streamed run of the server samples its use live: on kubernetes
	// that opens the run's side channel, which a plain run goes without.
	fmt.Fprintf(out, "\nthe same, warm, each run's use sampled live (a streamed run)\n")
	fmt.Fprintf(out, "%-11s %-5s %8s %8s %10s\n", "backend", "pool", "p50", "p90", "hits")
	for _, r := range rows {
		if r.pool != "warm" {
			continue
		}
		m, err := r.measure(ctx, dir, o.paced, 1, o.gap, true)
		if err != nil {
			return fmt.Errorf("%s %s spaced out, sampled: %w", r.backend, r.pool, err)
		}
		fmt.Fprintf(out, "%-11s %-5s %8s %8s %10s\n", r.backend, r.pool,
			stats.MS(stats.Percentile(m.lat, 50)), stats.MS(stats.Percentile(m.lat, 90)), m.hits)
	}
	if o.parityN > 0 {
		return parity(ctx, rows, o.parityN, out)
	}
	return nil
}

// printProofs says how long the kubernetes runners' network proofs took
// (one per runner, before its first run) and what the last one proved.
func printProofs(out io.Writer, pf *proofs) {
	if len(pf.took) == 0 {
		return
	}
	iso := pf.last
	what := iso.Mechanism + ", interfaces " + strings.Join(iso.Interfaces, " ")
	if len(iso.Targets) > 0 {
		what += ", targets refused " + strings.Join(iso.Targets, " ")
	}
	fmt.Fprintf(out, "\nthe isolation probe (kubernetes, one per runner before its first run): p50 %s, max %s over %d proofs (%s)\n",
		stats.MS(stats.Percentile(pf.took, 50)), stats.MS(slices.Max(pf.took)), len(pf.took), what)
}

// skillDir writes the benchmark's skill into a folder the sandbox user can
// read.
func skillDir() (string, error) {
	dir, err := os.MkdirTemp("", "bench-kube-")
	if err != nil {
		return "", err
	}
	err = errors.Join(
		os.Chmod(dir, 0o755),                                                           //nolint:gosec // the sandbox user reads the skill
		os.MkdirAll(filepath.Join(dir, "scripts"), 0o755),                              //nolint:gosec // as above
		os.WriteFile(filepath.Join(dir, "scripts", "hello.py"), []byte(script), 0o644), //nolint:gosec // as above
	)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
