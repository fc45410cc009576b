package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
	"github.com/sandboxrun/sandboxrun/sandbox/kube"
)

// poolRunner is what the two benched backends give: runs, pool figures, Close.
type poolRunner interface {
	sandbox.Runner
	PoolStats() sandbox.PoolStats
	Close() error
}

// row is a backend with its pool on or off; each measurement gets a new
// runner from it.
type row struct {
	backend, pool string
	open          func() (poolRunner, error)
}

// maxIdle outlasts every row: no warm sandbox expires during one.
const maxIdle = 10 * time.Minute

// settle lets a filled pool's last starts finish before a row is timed.
const settle = 3 * time.Second

// proofs records the network proof each kubernetes runner makes before
// its first run: how long it took and what it was.
type proofs struct {
	took []time.Duration
	last kube.Isolation
}

func newRows(ctx context.Context, o options, pf *proofs) ([]row, error) {
	cfg, err := kube.RESTConfig(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	openKube := func(warm int) func() (poolRunner, error) {
		return func() (poolRunner, error) {
			opts := []kube.Option{kube.WithRESTConfig(cfg), kube.WithNamespace(o.nspace), kube.WithVersion(sandboxrun.Version),
				kube.WithDefaultImage(sandboxrun.RunnerImage()), kube.WithMaxConcurrent(8), kube.WithWarmPool(warm, maxIdle),
				kube.WithClusterDNSTarget(o.clusterDNS), kube.WithAPIServerTarget(o.apiServer)}
			if o.targets != "" {
				opts = append(opts, kube.WithIsolationTargets(strings.Split(o.targets, ",")...))
			}
			k, err := kube.New(opts...)
			if err != nil {
				return nil, err
			}
			// The network proof is a one-time cost of a runner, not of a
			// run: timed here, and reported on its own line.
			t := time.Now()
			if err := k.CheckNetwork(ctx); err != nil {
				return nil, errors.Join(err, k.Close())
			}
			pf.took = append(pf.took, time.Since(t))
			pf.last = k.Isolation()
			return k, nil
		}
	}
	openDocker := func(warm int) func() (poolRunner, error) {
		return func() (poolRunner, error) {
			return docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(sandboxrun.RunnerImage()),
				docker.WithMaxConcurrent(8), docker.WithWarmPool(warm, maxIdle))
		}
	}
	return []row{
		{"docker", "off", openDocker(0)},
		{"docker", "warm", openDocker(o.warm)},
		{"kubernetes", "off", openKube(0)},
		{"kubernetes", "warm", openKube(o.warm)},
	}, nil
}

// limits are small, with a quarter CPU: the test node has two CPUs, and
// warm pods hold their requests while they wait.
func limits() policy.Limits {
	return policy.Limits{Timeout: 30 * time.Second, MemoryBytes: 256 << 20, CPUs: 0.25, Pids: 128,
		OutputBytes: 1 << 20, TmpBytes: 16 << 20}
}

type measured struct {
	lat  []time.Duration
	wall time.Duration
	hits string
}

// measure opens a runner, makes one run untimed (and lets the pool fill),
// then runs n executions with c workers, each worker pausing gap before
// each of its runs, and closes the runner. live samples each run's use as
// a streamed run of the server does.
func (r row) measure(ctx context.Context, skillDir string, n, c int, gap time.Duration, live bool) (m measured, err error) {
	pr, err := r.open()
	if err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, pr.Close()) }()
	if err := once(ctx, pr, skillDir); err != nil {
		return m, fmt.Errorf("first run: %w", err)
	}
	if pr.PoolStats().Size > 0 {
		for st := pr.PoolStats(); st.Ready < st.Size; st = pr.PoolStats() {
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return m, err
			}
		}
		if err := sleep(ctx, settle); err != nil {
			return m, err
		}
	}
	before := pr.PoolStats()

	m.lat = make([]time.Duration, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[i] = sleep(ctx, gap); errs[i] != nil {
					continue
				}
				t := time.Now()
				errs[i] = runOnce(ctx, pr, skillDir, live)
				m.lat[i] = time.Since(t)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	m.wall = time.Since(began)
	m.hits = "-"
	if after := pr.PoolStats(); after.Size > 0 {
		m.hits = fmt.Sprintf("%d/%d", after.Hits-before.Hits, n)
	}
	return m, errors.Join(errs...)
}

func once(ctx context.Context, r sandbox.Runner, skillDir string) error {
	return runOnce(ctx, r, skillDir, false)
}

// runOnce makes one run of the bench's script; live asks for its use sampled
// (on kubernetes that takes the run's side channel).
func runOnce(ctx context.Context, r sandbox.Runner, skillDir string, live bool) error {
	spec := sandbox.Spec{
		Skill: "bench", SkillDir: skillDir, Runtime: "python3",
		Argv:   []string{"python3", "/skills/bench/scripts/hello.py"},
		Stdin:  []byte(`{"name": "bench"}`),
		Limits: limits(),
	}
	if live {
		spec.UsageEvery, spec.Usage = sandbox.DefaultUsageEvery, func(sandbox.Usage) {}
	}
	res, err := r.Run(ctx, spec)
	return runOK(res, err)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
