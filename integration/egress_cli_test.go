//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestCLIEgressAllowlist runs a skill that names its hosts under an
// allowlist policy, end to end: the policy file, the skill's
// allowed_domains, --allow-domain, the Result and the audit log.
func TestCLIEgressAllowlist(t *testing.T) {
	t.Parallel()
	u := startUpstreams(t)
	plain, secure := "127.0.0.1:"+u.pp, "127.0.0.1:"+u.sp
	root := cliSkill(t, "fetcher", fmt.Sprintf("metadata:\n  network_access: \"true\"\n  allowed_domains: \"%s %s\"\n", plain, secure), map[string]string{
		"ca.pem": u.caPEM(),
		"scripts/fetch.py": fetchPy + fmt.Sprintf(`print(json.dumps({
  "http": fetch("http://%s/cli"),
  "https": fetch("https://%s/cli-tls"),
  "other": fetch("http://127.0.0.1:1/"),
}))
`, plain, secure),
	})
	dir := t.TempDir()
	polText := fmt.Sprintf("network: allowlist\nallowed_domains: [\"%s\", \"%s\"]\negress:\n  allow_cidrs: [127.0.0.1/32]\n", plain, secure)
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(polText), 0o644))
	auditLog := filepath.Join(dir, "audit.jsonl")
	tmp := shortDir(t) // where the CLI's proxies make their folders
	env := []string{"TMPDIR=" + tmp, "SANDBOXRUN_RUNNER_IMAGE=" + sandboxrun.RunnerImage()}

	run := func(extra ...string) (sandbox.Result, map[string]fetched) {
		t.Helper()
		args := append([]string{"--skills", root, "--policy", pol, "run", "--json", "--audit-log", auditLog, "--workspace", root}, extra...)
		r := cli(t, root, env, "", append(args, "fetcher", "scripts/fetch.py")...)
		require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
		var res sandbox.Result
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
		var out map[string]fetched
		require.NoError(t, json.Unmarshal(res.Output, &out), res.Stdout+res.Stderr)
		requireEmptyDir(t, tmp)
		return res, out
	}

	res, out := run()
	require.Equal(t, fetched{Status: 200, Body: "hello /cli"}, out["http"])
	require.Equal(t, fetched{Status: 200, Body: "hello /cli-tls"}, out["https"])
	require.Equal(t, 403, out["other"].Status)
	require.Contains(t, out["other"].Body, "127.0.0.1:1 is not in this run's allowlist")
	require.False(t, res.Limits.Network)
	require.ElementsMatch(t, []string{plain, secure}, res.Limits.Egress.Allow)
	require.Equal(t, []string{"127.0.0.1/32"}, res.Limits.Egress.AllowCIDRs)
	require.Equal(t, int64(2), res.Egress.Allowed)
	require.Equal(t, int64(1), res.Egress.Denied)

	lines := strings.Split(strings.TrimSpace(readFile(t, auditLog)), "\n")
	require.Len(t, lines, 1)
	var rec audit.Record
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	require.Len(t, rec.Egress.Decisions, 3, "the audit record carries every decision")
	hosts := map[string]bool{}
	for _, d := range rec.Egress.Decisions {
		hosts[fmt.Sprintf("%s:%d", d.Host, d.Port)] = d.Allowed
		require.NotZero(t, d.Time)
	}
	require.Equal(t, map[string]bool{plain: true, secure: true, "127.0.0.1:1": false}, hosts)

	// --allow-domain narrows: HTTPS is no longer allowed.
	res, out = run("--allow-domain", plain)
	require.Equal(t, 200, out["http"].Status)
	require.Contains(t, out["https"].Error, "Tunnel connection failed: 403")
	require.Equal(t, []string{plain}, res.Limits.Egress.Allow)

	// ...and never widens: a host outside the policy adds nothing.
	res, _ = run("--allow-domain", plain+",127.0.0.1:1")
	require.Equal(t, []string{plain}, res.Limits.Egress.Allow)

	// Narrowed to nothing, the run has no network at all: no proxy.
	res, out = run("--allow-domain", "127.0.0.1:2")
	require.Nil(t, res.Limits.Egress)
	require.Nil(t, res.Egress)
	require.Contains(t, res.Limits.Sources["network"].String(), "off: the allowlist is empty")
	require.Contains(t, out["http"].Error, "Connection refused")

	// Without the operator's CIDR, even listed IP literals are refused.
	require.NoError(t, os.WriteFile(pol, []byte(strings.Replace(polText, "  allow_cidrs: [127.0.0.1/32]\n", "  max_connections: 5\n", 1)), 0o644))
	_, out = run()
	require.Equal(t, 403, out["http"].Status)
	require.Contains(t, out["http"].Body, "127.0.0.1 is an IP address named directly")
	require.Equal(t, []string{"127.0.0.1 /cli", "127.0.0.1 /cli-tls", "127.0.0.1 /cli", "127.0.0.1 /cli"}, stripPorts(u.requests()), "only what the allowlists allowed arrived")
	requireNoSkillContainers(t, "fetcher")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func stripPorts(reqs []string) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		host, path, _ := strings.Cut(r, " ")
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
		out[i] = host + " " + path
	}
	return out
}
