//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/mcptest"
	"github.com/sandboxrun/sandboxrun/mcp"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// burnCode holds 64 MiB and keeps one core busy for about 3 s.
const burnCode = burnHead + "end = time.time() + 3\n" + burnTail

const burnHead = `import time
held = bytearray(64 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
`

const burnTail = `n = 0
while time.time() < end:
    n += 1
print(len(held), n > 0)
`

// usageSamples collects a run's samples and counts any sent after Run
// returned.
type usageSamples struct {
	mu       sync.Mutex
	got      []sandbox.Usage
	returned bool
	late     int
}

func (u *usageSamples) add(s sandbox.Usage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.returned {
		u.late++
	}
	u.got = append(u.got, s)
}

func (u *usageSamples) done() []sandbox.Usage {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.returned = true
	return append([]sandbox.Usage(nil), u.got...)
}

// requireBurnUsage checks the samples of a burnCode run against what it
// did, and the Result's peaks against the samples.
func requireBurnUsage(t *testing.T, got []sandbox.Usage, res *sandbox.Result) {
	t.Helper()
	require.True(t, res.Success, "%s %s", res.Error, res.Stderr)
	require.NotEmpty(t, got, "a 3 s run sampled every 500 ms shows usage")
	var peaks sandbox.UsagePeaks
	for _, u := range got {
		require.Positive(t, u.MemoryBytes, "%+v", u)
		require.Positive(t, u.Pids, "%+v", u)
		peaks.Add(u)
	}
	require.GreaterOrEqual(t, peaks.MemoryBytes, int64(48<<20), "the script holds 64 MiB: %+v", got)
	require.Greater(t, peaks.CPUPercent, 10.0, "the script keeps a core busy: %+v", got)
	require.Equal(t, peaks.MemoryBytes, res.PeakMemoryBytes)
	require.Equal(t, peaks.Pids, res.PeakPids)
	require.InDelta(t, peaks.CPUPercent, res.PeakCPUPercent, 0)
	t.Logf("%d samples, peaks: cpu %.1f%%, memory %d MiB, pids %d", len(got), peaks.CPUPercent, peaks.MemoryBytes>>20, peaks.Pids)
}

func burnSpec(t *testing.T, u *usageSamples) sandbox.Spec {
	spec := pySpec(t, burnCode)
	spec.UsageEvery = 500 * time.Millisecond
	spec.Usage = u.add
	return spec
}

// TestLiveUsageDocker: the Docker backend samples a running container
// (its cgroup on this host, else the engine's stats).
func TestLiveUsageDocker(t *testing.T) {
	t.Parallel()
	var u usageSamples
	res := run(t, burnSpec(t, &u))
	got := u.done()
	requireBurnUsage(t, got, res)
	time.Sleep(time.Second)
	u.mu.Lock()
	defer u.mu.Unlock()
	require.Zero(t, u.late, "no sample after the Result")
}

// TestLiveUsageOCI: the oci backend samples runc's cgroup.
func TestLiveUsageOCI(t *testing.T) {
	t.Parallel()
	r := ociBackend(t)
	var u usageSamples
	ctx, cancel := context.WithTimeout(context.Background(), runHangBound)
	defer cancel()
	res, err := r.Run(ctx, burnSpec(t, &u))
	require.NoError(t, err)
	got := u.done()
	requireBurnUsage(t, got, res)
	time.Sleep(time.Second)
	u.mu.Lock()
	defer u.mu.Unlock()
	require.Zero(t, u.late, "no sample after the Result")
}

// TestServerStreamsUsage: a real serve's NDJSON stream carries usage
// events between the output and the Result, which keeps the peaks.
func TestServerStreamsUsage(t *testing.T) {
	t.Parallel()
	const name = "srv-usage"
	root := cliSkill(t, name, "", map[string]string{"scripts/burn.py": burnCode})
	srv := startServer(t, root, "--warm-pool", "0")
	req, err := http.NewRequest("POST", srv.url+"/v1/skills/"+name+"/run", strings.NewReader(`{"script": "scripts/burn.py", "usage_every_ms": 1000}`))
	require.NoError(t, err)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var (
		types []string
		usage []sandbox.Usage
		res   *sandbox.Result
	)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev struct {
			Type   string          `json:"type"`
			Usage  *sandbox.Usage  `json:"usage"`
			Result *sandbox.Result `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
		types = append(types, ev.Type)
		if ev.Usage != nil {
			usage = append(usage, *ev.Usage)
		}
		if ev.Result != nil {
			res = ev.Result
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, "result", types[len(types)-1], "%v", types)
	require.Contains(t, types, "usage")
	require.NotNil(t, res)
	requireBurnUsage(t, usage, res)
	eventuallyNoSkillContainers(t, name)
}

// TestServerMCPProgressCarriesUsage: over a real serve's /mcp, a run
// called with a progress token gets progress notifications whose _meta
// holds the sandbox's latest usage sample (every 2 s, the progress
// interval: the script runs 6 s).
func TestServerMCPProgressCarriesUsage(t *testing.T) {
	t.Parallel()
	const name = "srv-mcp-usage"
	root := cliSkill(t, name, "", map[string]string{"scripts/burn.py": burnHead + "end = time.time() + 6\n" + burnTail})
	srv := startServer(t, root, "--warm-pool", "0")
	var (
		mu   sync.Mutex
		seen []*mcpsdk.ProgressNotificationParams
	)
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "integration", Version: "v0"}, &mcpsdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, req.Params)
		},
	})
	cs, err := client.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.url + "/mcp"}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	params := &mcpsdk.CallToolParams{Name: mcp.ToolRunScript, Arguments: map[string]any{"skill": name, "script": "scripts/burn.py"}}
	params.SetProgressToken("usage-1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError, mcptest.Text(res))
	mu.Lock()
	defer mu.Unlock()
	var usage []sandbox.Usage
	for _, p := range seen {
		raw, ok := p.Meta[mcp.UsageMetaKey]
		if !ok {
			continue
		}
		b, err := json.Marshal(raw)
		require.NoError(t, err)
		var u sandbox.Usage
		require.NoError(t, json.Unmarshal(b, &u))
		require.Positive(t, u.MemoryBytes, "%s", b)
		require.Contains(t, p.Message, "memory ")
		usage = append(usage, u)
	}
	require.NotEmpty(t, usage, "a 6 s run reports its usage in its progress")
	eventuallyNoSkillContainers(t, name)
}

// TestLiveUsageWorkspaceBytes: a run that writes 4 MiB to its writable
// workspace, then keeps running, shows them in its samples
// (workspace_bytes: the copy-on-write view's write layer), on Docker and
// oci.
func TestLiveUsageWorkspaceBytes(t *testing.T) {
	t.Parallel()
	code := "import time\nwith open('/workspace/out.bin', 'wb') as f:\n    f.write(b'x' * (4 << 20))\nend = time.time() + 3\n" + "while time.time() < end:\n    pass\nprint('done')\n"
	check := func(t *testing.T, got []sandbox.Usage, res *sandbox.Result) {
		t.Helper()
		require.True(t, res.Success, "%s %s", res.Error, res.Stderr)
		require.NotEmpty(t, got, "a 3 s run sampled every 500 ms shows usage")
		last := got[len(got)-1]
		require.NotNil(t, last.WorkspaceBytes, "a writable workspace's view is measured: %+v", last)
		require.GreaterOrEqual(t, *last.WorkspaceBytes, int64(4<<20), "the file written before the last sample")
		for _, u := range got {
			require.NotNil(t, u.WorkspaceBytes, "%+v", u)
		}
	}
	t.Run("docker", func(t *testing.T) {
		var u usageSamples
		spec := pySpec(t, code)
		spec.UsageEvery, spec.Usage = 500*time.Millisecond, u.add
		writable(t, &spec, t.TempDir())
		res := run(t, spec)
		check(t, u.done(), res)
	})
	t.Run("oci", func(t *testing.T) {
		r := ociBackend(t)
		var u usageSamples
		spec := pySpec(t, code)
		spec.UsageEvery, spec.Usage = 500*time.Millisecond, u.add
		writable(t, &spec, t.TempDir())
		ctx, cancel := context.WithTimeout(context.Background(), runHangBound)
		defer cancel()
		res, err := r.Run(ctx, spec)
		require.NoError(t, err)
		check(t, u.done(), res)
	})
}
