//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// A skill asking more CPUs than the engine's host has (the engine here is
// this machine's) is refused by every explanation (policy check, exec
// --dry-run, explain over HTTP) in the words the run then refuses it with;
// with the engine out of reach, the explanation says it could not check.
func TestExplainRefusesBeyondTheHostAsTheRunDoes(t *testing.T) {
	t.Parallel()
	const name = "greedy-cpus"
	const beyond = "beyond what the engine's host offers"
	cpus := runtime.NumCPU() + 2
	root := cliSkill(t, name, fmt.Sprintf("allowed-tools: Bash(python3:*)\nmax_cpus: %d\n", cpus),
		map[string]string{"scripts/x.py": "print('ran')\n"})
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("on_exceed: refuse\nlimits:\n  cpus: {max: 64}\n"), 0o600))
	ask := fmt.Sprintf("cpus %d (max_cpus / --cpus) is above the engine host's %d CPUs", cpus, runtime.NumCPU())

	check := cli(t, root, nil, "", "--skills", root, "--policy", pol, "policy", "check", name)
	require.Equal(t, 1, check.code, check.stdout+check.stderr)
	require.Contains(t, check.stdout, "REFUSED: "+beyond)
	require.Contains(t, check.stdout, ask)

	dry := cli(t, root, nil, "", "--skills", root, "--policy", pol, "exec", "--dry-run", name, "--", "python3 scripts/x.py")
	require.Equal(t, 2, dry.code, dry.stdout+dry.stderr)
	require.Contains(t, dry.stdout, "denied: "+beyond)

	ran := cli(t, root, nil, "", "--skills", root, "--policy", pol, "run", name, "scripts/x.py")
	require.Equal(t, 2, ran.code, ran.stdout+ran.stderr)
	require.Contains(t, ran.stderr, beyond)
	require.Contains(t, ran.stderr, ask)
	require.NotContains(t, ran.stdout, "ran")

	srv := startServer(t, root, "--policy", pol, "--warm-pool", "0")
	var refusals []string
	for _, endpoint := range []string{"explain", "run"} {
		resp, body := srv.post(t, "/v1/skills/"+name+"/"+endpoint, `{"script": "scripts/x.py"}`)
		require.Equal(t, 403, resp.StatusCode, "%s: %s", endpoint, body)
		var e struct {
			Error       string `json:"error"`
			Explanation *struct {
				Host struct {
					Checked bool `json:"checked"`
				} `json:"host"`
			} `json:"explanation"`
		}
		require.NoError(t, json.Unmarshal(body, &e))
		require.Contains(t, e.Error, ask)
		if endpoint == "explain" {
			require.NotNil(t, e.Explanation, string(body))
			require.True(t, e.Explanation.Host.Checked, string(body))
		}
		refusals = append(refusals, e.Error)
	}
	require.Equal(t, refusals[0], refusals[1], "explain and run refuse in the same words")
	requireNoSkillContainers(t, name)

	// Asking within the host, the explanation says the host was checked.
	ok := cli(t, root, nil, "", "--skills", root, "--policy", pol, "exec", "--dry-run", "--cpus", "1", name, "--", "python3 scripts/x.py")
	require.Equal(t, 0, ok.code, ok.stdout+ok.stderr)
	require.Contains(t, ok.stdout, "host: checked against the engine's host")

	// No engine to ask: allowed as far as the policy goes, and saying the
	// host was not checked.
	away := []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}
	check = cli(t, root, away, "", "--skills", root, "--policy", pol, "policy", "check", name)
	require.Equal(t, 0, check.code, check.stdout+check.stderr)
	require.Contains(t, check.stdout, "host: could not check the engine's host")
}
