//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The tenants tests start the real `sandboxrun serve` with a labelled
// tokens file and a policy tenants block, against the real engine.

// tenantTokens are the tokens by label these tests use.
var tenantTokens = map[string]string{
	"quiet":  "quiet-token-0123456789abcdef",
	"flood":  "flood-token-0123456789abcdef",
	"runs":   "runs-token-0123456789abcdefg",
	"cpu":    "cpu-token-0123456789abcdefgh",
	"memory": "memory-token-0123456789abcde",
	"acct":   "acct-token-0123456789abcdefg",
	"ops":    "ops-token-0123456789abcdefgh",
	"store":  "store-token-0123456789abcdef",
	"egress": "egress-token-0123456789abcde",
}

// tenantFiles writes the tokens file and a policy with body, and returns
// the serve flags that name them.
func tenantFiles(t *testing.T, policyBody string) []string {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for label, tok := range tenantTokens {
		lines = append(lines, label+" "+tok)
	}
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(policyBody), 0o600))
	return []string{"--tokens", tokens, "--policy", pol}
}

func tenantSkill(t *testing.T, name string) string {
	return cliSkill(t, name, "", map[string]string{
		"scripts/work.py": "import time, json, sys\nargs = json.load(sys.stdin)\nend = time.process_time() + args.get('cpu', 0)\nwhile time.process_time() < end:\n    pass\ntime.sleep(args.get('sleep', 0))\nprint('done')\n",
	})
}

// tenantCall is one run or request as a token: the status, Retry-After
// and the body.
func tenantCall(t *testing.T, url, method, path, label, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tenantTokens[label])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

// floodCall is tenantCall for the flood's goroutines: the status, or -1
// when the exchange failed.
func floodCall(url, body string) int {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return -1
	}
	req.Header.Set("Authorization", "Bearer "+tenantTokens["flood"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func usageOf(t *testing.T, url, label string) sandboxrun.TenantUsage {
	t.Helper()
	status, _, body := tenantCall(t, url, "GET", "/v1/usage", label, "")
	require.Equal(t, http.StatusOK, status, string(body))
	var u sandboxrun.TenantUsage
	require.NoError(t, json.Unmarshal(body, &u))
	return u
}

// TestTenantsFloodDoesNotStarveQuiet: one token floods a server of two
// slots at 8× its capacity while another calls once a second; with fair
// share the quiet token is never refused and every one of its runs
// completes (so each got a slot within its queue wait), while the flood is
// turned away.
func TestTenantsFloodDoesNotStarveQuiet(t *testing.T) {
	const name = "tenants-flood"
	flags := tenantFiles(t, "tenants:\n  fair_share: true\n")
	srv := startServer(t, tenantSkill(t, name), append(flags,
		"--max-running", "2", "--max-queued", "4", "--queue-wait", "20s", "--warm-pool", "0")...)
	body := `{"script": "scripts/work.py", "args": {"sleep": 0.3}}`
	path := "/v1/skills/" + name + "/run"

	stop := make(chan struct{})
	var mu sync.Mutex
	floodStatus := map[int]int{}
	var wg sync.WaitGroup
	for range 16 { // 8× the two slots
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				status := floodCall(srv.url+path, body)
				mu.Lock()
				floodStatus[status]++
				mu.Unlock()
				if status == http.StatusTooManyRequests {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(2 * time.Second) // the flood fills the slots and the queue
	var quiet []time.Duration
	for range 8 {
		start := time.Now()
		status, _, b := tenantCall(t, srv.url, "POST", path, "quiet", body)
		took := time.Since(start)
		require.Equal(t, http.StatusOK, status, "the quiet token is refused under the flood: %s", b)
		var res sandbox.Result
		require.NoError(t, json.Unmarshal(b, &res))
		require.True(t, res.Success, "the quiet run did not complete: %s", res.Stderr)
		quiet = append(quiet, took)
		time.Sleep(time.Second - min(took, time.Second))
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, floodStatus[http.StatusTooManyRequests], "the flood was never turned away, so it did not flood: %v", floodStatus)
	require.Positive(t, floodStatus[http.StatusOK], "the flood got no run at all: %v", floodStatus)
	slices.Sort(quiet)
	t.Logf("flood answers %v; quiet latencies p50 %s max %s", floodStatus, quiet[len(quiet)/2], quiet[len(quiet)-1])
	eventuallyNoSkillContainers(t, name)
}

// alignWindow waits until the clock is in the first tenth of a window of
// w, so a few runs fit in one window.
func alignWindow(w time.Duration) {
	into := time.Duration(time.Now().UnixNano()) % w
	if into > w/10 {
		time.Sleep(w - into)
	}
}

// TestTenantsQuotasRefuseAndNextWindowLetsIn: each quota (runs, CPU
// seconds, memory GiB-seconds) lets one run in, refuses the next before it
// starts with 429, Retry-After up to the window's end and the quota's
// name, and the next window lets a run in again.
func TestTenantsQuotasRefuseAndNextWindowLetsIn(t *testing.T) {
	const name = "tenants-quota"
	const window = 8 * time.Second
	flags := tenantFiles(t, `tenants:
  labels:
    runs: {quotas: [{window: 8s, runs: 1}]}
    cpu: {quotas: [{window: 8s, cpu_seconds: 0.05}]}
    memory: {quotas: [{window: 8s, memory_gib_seconds: 0.001}]}
`)
	srv := startServer(t, tenantSkill(t, name), append(flags, "--warm-pool", "0")...)
	path := "/v1/skills/" + name + "/run"
	for _, tc := range []struct{ label, quota, body string }{
		{"runs", "runs", `{"script": "scripts/work.py"}`},
		{"cpu", "cpu_seconds", `{"script": "scripts/work.py", "args": {"cpu": 0.1}}`},
		{"memory", "memory_gib_seconds", `{"script": "scripts/work.py"}`},
	} {
		t.Run(tc.quota, func(t *testing.T) {
			quotaRefusesThenNextWindow(t, srv.url, path, tc.label, tc.quota, tc.body, window)
		})
	}
	eventuallyNoSkillContainers(t, name)
}

// quotaRefusesThenNextWindow runs body as label until its quota refuses
// a run with 429, the quota's name and a Retry-After within the window,
// then waits that long and sees the next window let a run in. It makes no
// assumption on how long a run takes: a run may end in a later window
// than it began (on a slow host, or near a window's end) and a call after
// it may fall into a fresh window, which lets it in; only a refusal is
// checked, and it must come within a few windows.
func quotaRefusesThenNextWindow(t *testing.T, url, path, label, quota, body string, window time.Duration) {
	t.Helper()
	alignWindow(window)
	ran := usageOf(t, url, label).Total.Runs // runs before count as this token's
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 8, "quota %s never refused a run", quota)
		status, retry, b := tenantCall(t, url, "POST", path, label, body)
		if status == http.StatusOK {
			ran++
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, status, string(b))
		require.Positive(t, ran, "the first run of a fresh token fits its quota: %s", b)
		require.Contains(t, string(b), "quota "+quota+" per "+window.String())
		wait, err := strconv.Atoi(retry)
		require.NoError(t, err, "Retry-After %q", retry)
		require.GreaterOrEqual(t, wait, 1)
		require.LessOrEqual(t, wait, int(window/time.Second))
		u := usageOf(t, url, label)
		require.Equal(t, ran, u.Total.Runs, "the refused run neither ran nor counted")

		time.Sleep(time.Duration(wait)*time.Second + 200*time.Millisecond)
		status, _, b = tenantCall(t, url, "POST", path, label, body)
		require.Equal(t, http.StatusOK, status, "the next window lets a run in: %s", b)
		return
	}
}

// TestTenantsUsageAddsUpAndSurvivesKill: a token's usage equals the sums
// over its Results, in GET /v1/usage, the operator's view and `sandboxrun
// usage`; after a SIGKILL of the server a new one on the same --state has
// the same figures and still enforces the runs quota they reached.
func TestTenantsUsageAddsUpAndSurvivesKill(t *testing.T) {
	const name = "tenants-usage"
	flags := tenantFiles(t, `tenants:
  operators: [ops]
  labels:
    acct: {quotas: [{window: 24h, runs: 3}]}
`)
	state := t.TempDir()
	root := tenantSkill(t, name)
	args := append(flags, "--state", state, "--warm-pool", "0")
	srv := startServer(t, root, args...)
	path := "/v1/skills/" + name + "/run"

	var runs, cpu, memory int64
	for _, c := range []string{"0.05", "0.2", "0"} {
		status, _, b := tenantCall(t, srv.url, "POST", path, "acct", `{"script": "scripts/work.py", "args": {"cpu": `+c+`}}`)
		require.Equal(t, http.StatusOK, status, string(b))
		var res sandbox.Result
		require.NoError(t, json.Unmarshal(b, &res))
		runs++
		cpu += res.CPUTimeMS
		memory += (res.Limits.MemoryBytes >> 20) * res.DurationMS
	}
	require.Positive(t, cpu, "the runs used CPU")
	check := func(u sandboxrun.TenantUsage) {
		t.Helper()
		require.Equal(t, "acct", u.Label)
		require.Equal(t, runs, u.Total.Runs)
		require.Equal(t, cpu, u.Total.CPUTimeMS, "the usage is the sum of the Results' cpu_time_ms")
		require.Equal(t, memory, u.Total.MemoryMiBMS, "memory limit × duration, summed")
		day := u.Windows[len(u.Windows)-1]
		require.Equal(t, runs, day.Used.Runs)
		require.Equal(t, cpu, day.Used.CPUTimeMS)
	}
	check(usageOf(t, srv.url, "acct"))
	status, _, b := tenantCall(t, srv.url, "GET", "/v1/usage?all=true", "ops", "")
	require.Equal(t, http.StatusOK, status, string(b))
	require.Contains(t, string(b), `"label": "acct"`)
	require.NotContains(t, string(b), tenantTokens["acct"])

	require.NoError(t, srv.cmd.Process.Kill())
	<-srv.done
	again := startServer(t, root, args...)
	check(usageOf(t, again.url, "acct"))
	status, _, b = tenantCall(t, again.url, "POST", path, "acct", `{"script": "scripts/work.py"}`)
	require.Equal(t, http.StatusTooManyRequests, status, "the runs quota reached before the kill holds after it: %s", b)
	require.Contains(t, string(b), "quota runs per 24h")

	out, err := exec.Command(sandboxrunBin(t), append([]string{"usage", "--state", state, "--format", "json"}, flags[2:]...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	var all struct{ Tenants []sandboxrun.TenantUsage }
	require.NoError(t, json.Unmarshal(out, &all), string(out))
	require.Len(t, all.Tenants, 1, fmt.Sprint(all.Tenants))
	check(all.Tenants[0])
	eventuallyNoSkillContainers(t, name)
}
