//go:build kube

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// warmLimits are the suite's limits with a quarter CPU: a warm pod holds
// its requests on the node while it waits, and the test node has two.
func warmLimits() policy.Limits {
	l := sandboxtest.DefaultLimits()
	l.CPUs = 0.25
	return l
}

// warmRunners numbers the warm runners of this process.
var warmRunners atomic.Int32

// newWarmRunner is a runner on the test cluster with a warm pool of size
// whose pods wait maxIdle at most. Its pods name it as their owner host,
// as a replica's do (serve --replica), so that its Close, at the end of
// the test, is seen to leave no warm pod of its own behind while another
// runner's pool is still up.
func newWarmRunner(t *testing.T, size int, maxIdle time.Duration) *kubebackend.Runner {
	t.Helper()
	cfg, err := kubebackend.RESTConfig(os.Getenv("SANDBOXRUN_KUBECONFIG"))
	require.NoError(t, err)
	owner := fmt.Sprintf("warm-runner-%d", warmRunners.Add(1))
	k, err := kubebackend.New(kubebackend.WithRESTConfig(cfg), kubebackend.WithNamespace(runner.Namespace()),
		kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
		kubebackend.WithMaxConcurrent(4), kubebackend.WithWarmPool(size, maxIdle), kubebackend.WithOwnerHost(owner))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, k.Close())
		left, err := livePods(context.Background(), sandbox.LabelOwnerPID+"="+strconv.Itoa(os.Getpid())+","+sandbox.LabelOwnerHost+"="+owner)
		require.NoError(t, err)
		for _, name := range left {
			require.False(t, strings.HasPrefix(name, "sandboxrun-warm-"), "Close left warm pod %s", name)
		}
	})
	return k
}

// waitFilled waits until the pool holds size pods, idle or starting.
func waitFilled(t *testing.T, k *kubebackend.Runner) {
	t.Helper()
	require.Eventually(t, func() bool { st := k.PoolStats(); return st.Ready == st.Size },
		time.Minute, 20*time.Millisecond, "the pool refills after a run")
}

// TestConformanceWarm runs the contract with the warm pool on, so its
// cases run in pods started ahead. The suite's cases share one skill
// folder and one workspace here (each writes its own files), so that
// those with the suite's default limits have the same pod and can take
// each other's warm pods; cases that change a limit get a pod of their
// own, as they must.
func TestConformanceWarm(t *testing.T) {
	const size = 3
	k := newWarmRunner(t, size, 2*time.Minute)
	shared := sandboxtest.HostSkillDir(t, nil)
	workspace := sandboxtest.HostDir(t)
	var mu sync.Mutex
	skillDir := func(t *testing.T, files map[string]string) string {
		mu.Lock()
		defer mu.Unlock()
		for name, body := range files {
			p := filepath.Join(shared, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))  //nolint:gosec // the sandbox user reads it
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644)) //nolint:gosec // as above
		}
		return shared
	}
	limits := warmLimits()

	// One cold run fills the pool for the suite's common configuration.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := k.Run(ctx, sandbox.Spec{Skill: "t", SkillDir: shared, Argv: []string{"true"}, Limits: limits})
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	waitFilled(t, k)

	t.Run("suite", func(t *testing.T) {
		sandboxtest.Run(t, sandboxtest.Env{
			Runner:    k,
			SkillDir:  skillDir,
			Workspace: func(*testing.T) string { return workspace },
			Limits:    &limits,
			Gone:      requirePodGone,
			// A pool of its own: k's is full of the suite's pods, so it
			// might have no room for a session run's configuration.
			Warm: newWarmRunner(t, 1, time.Minute),
		})
	})
	st := k.PoolStats()
	t.Logf("warm pool after the suite: %+v", st)
	require.GreaterOrEqual(t, st.Hits, uint64(size), "the suite's runs took the warm pods")
	require.Positive(t, st.Misses, "runs with other limits did not")
}

// A warm pod serves one run: the next run is in another pod (another
// host name), finds nothing the previous one left in /tmp, and sees its
// own run id.
func TestWarmPodsServeOneRunEach(t *testing.T) {
	k := newWarmRunner(t, 1, 2*time.Minute)
	spec := sandbox.Spec{
		Skill: "t", SkillDir: sandboxtest.HostSkillDir(t, nil), Limits: warmLimits(),
		Argv: []string{"python3", "-c", `
import json, os, socket
left = os.path.exists("/tmp/left-behind")
open("/tmp/left-behind", "w").write("x")
print(json.dumps({"host": socket.gethostname(), "left": left, "run_id": os.environ["SANDBOXRUN_RUN_ID"]}))
`},
	}
	hosts := map[string]bool{}
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := k.Run(ctx, spec)
		cancel()
		require.NoError(t, err)
		require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
		var got struct {
			Host  string `json:"host"`
			Left  bool   `json:"left"`
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal(res.Output, &got), res.Stdout)
		require.False(t, got.Left, "run %d found another run's file", i)
		require.Equal(t, res.ID, got.RunID)
		require.False(t, hosts[got.Host], "run %d reused pod %s", i, got.Host)
		hosts[got.Host] = true
		if i > 0 {
			require.True(t, strings.HasPrefix(got.Host, "sandboxrun-warm-"), "run %d ran in %s", i, got.Host)
		}
		requirePodGone(t, res.ID)
		waitFilled(t, k)
	}
	require.Equal(t, sandbox.PoolStats{Size: 1, Ready: 1, Hits: 2, Misses: 1}, k.PoolStats())
}
