//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

// What POST /explain answers over HTTP is what the run that follows on the
// real engine ran under (limits, network, image), and the answer names no
// host folder: not the skill's, not the policy file's.
func TestExplainOverHTTPMatchesTheRun(t *testing.T) {
	t.Parallel()
	const name = "srv-explain"
	root := serverSkill(t, name)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("on_exceed: clamp\nlimits:\n  memory: {max: 96Mi}\n  timeout: {max: 20s}\n"), 0o600))
	srv := startServer(t, root, "--policy", pol, "--warm-pool", "0")

	for _, tc := range []struct{ endpoint, body string }{
		{"run", `{"script": "scripts/echo.py", "args": {"n": 1}, "timeout": 15, "memory_mib": 200}`},
		{"python", `{"code": "print(1)", "timeout": "30s"}`},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			resp, body := srv.post(t, "/v1/skills/"+name+"/explain", tc.body)
			require.Equal(t, 200, resp.StatusCode, string(body))
			for _, host := range []string{root, pol, filepath.Dir(pol)} {
				require.NotContains(t, string(body), host, "the explanation names a host folder")
			}
			var e struct {
				Limits policy.Limits `json:"limits"`
				Image  string        `json:"image"`
			}
			require.NoError(t, json.Unmarshal(body, &e))
			require.NotEmpty(t, e.Limits.Clamped, "the policy's ceiling clamps the request")

			resp, body = srv.post(t, "/v1/skills/"+name+"/"+tc.endpoint, tc.body)
			require.Equal(t, 200, resp.StatusCode, string(body))
			var res struct {
				Success bool          `json:"success"`
				Stderr  string        `json:"stderr"`
				Limits  policy.Limits `json:"limits"`
				Image   string        `json:"image"`
			}
			require.NoError(t, json.Unmarshal(body, &res))
			require.True(t, res.Success, res.Stderr)
			require.Equal(t, e.Limits.MemoryBytes, res.Limits.MemoryBytes)
			require.Equal(t, e.Limits.TimeoutSec, res.Limits.TimeoutSec)
			require.Equal(t, e.Limits.CPUs, res.Limits.CPUs)
			require.Equal(t, e.Limits.Pids, res.Limits.Pids)
			require.Equal(t, e.Limits.Network, res.Limits.Network)
			require.Equal(t, e.Limits.Clamped, res.Limits.Clamped)
			require.Equal(t, e.Image, res.Image)
		})
	}
}

// A run the policy refuses gets a 403 over HTTP whose body tells the
// policy's words without the server's folders: not the policy file, not the
// skills' folder, not the sessions' root.
func TestRefusedRunOverHTTPNamesNoHostPath(t *testing.T) {
	t.Parallel()
	const name = "srv-refused"
	root := serverSkill(t, name)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("limits:\n  timeout: {max: 20s}\n"), 0o600))
	sessions := filepath.Join(dir, "sessions")
	srv := startServer(t, root, "--policy", pol, "--sessions", sessions, "--warm-pool", "0")

	for _, tc := range []struct{ path, body, says string }{
		{"/v1/skills/" + name + "/run", `{"script": "scripts/echo.py", "timeout": 100}`, "operator policy line 2"},
		{"/v1/skills/" + name + "/python", `{"code": "print(1)", "timeout": 100}`, "operator policy line 2"},
		{"/v1/skills/" + name + "/exec", `{"command": "curl http://x"}`, "Bash(curl:*)"},
		{"/v1/skills/nope/run", `{"script": "scripts/echo.py"}`, "the skills folder"},
	} {
		resp, body := srv.post(t, tc.path, tc.body)
		require.Contains(t, []int{403, 404}, resp.StatusCode, string(body))
		require.Contains(t, string(body), tc.says)
		for _, host := range []string{root, pol, dir, sessions} {
			require.NotContains(t, string(body), host, "the refusal names a host folder")
		}
	}
}
