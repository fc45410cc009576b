//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestCLIStrictPolicyOverridesTheSkill runs a skill that asks for the
// network, a writable workspace and huge limits under a strict operator
// policy, and checks from inside the sandbox that none of it took effect.
func TestCLIStrictPolicyOverridesTheSkill(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "greedy",
		"allowed-tools: Bash(cat:*) Write\nmetadata:\n  network_access: \"true\"\n  max_memory: \"20480\"\n  max_execution_time: \"600\"\n  max_cpus: \"2\"\n",
		map[string]string{"scripts/probe.py": `import json, os
nets = sorted(os.listdir("/sys/class/net"))
mem = open("/sys/fs/cgroup/memory/memory.limit_in_bytes").read().strip()
try:
    open("/workspace/written", "w").write("x")
    writable = True
except OSError:
    writable = False
print(json.dumps({"nets": nets, "mem": int(mem), "writable": writable}))
`})
	ws := t.TempDir()
	require.NoError(t, os.Chmod(ws, 0o777))
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(`limits:
  timeout: {default: 10s, max: 20s}
  memory: {default: 128Mi, max: 256Mi}
  cpus: {default: 0.5, max: 1}
on_exceed: clamp
network: none
workspace:
  write: read-only
  roots: [`+ws+`]
`), 0o644))

	r := cli(t, ws, nil, "", "--skills", root, "--policy", pol, "run", "--json", "--workspace", ws, "greedy", "scripts/probe.py")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	var res sandbox.Result
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	var seen struct {
		Nets     []string `json:"nets"`
		Mem      int64    `json:"mem"`
		Writable bool     `json:"writable"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &seen))
	require.Equal(t, []string{"lo"}, seen.Nets, "network_access must not give a network under network: none")
	require.Equal(t, int64(256<<20), seen.Mem, "max_memory must be clamped to the policy's ceiling")
	require.False(t, seen.Writable, "workspace.write: read-only beats Write")
	require.NoFileExists(t, filepath.Join(ws, "written"))
	require.InDelta(t, 20.0, res.Limits.TimeoutSec, 1e-9)
	require.InDelta(t, 1.0, res.Limits.CPUs, 1e-9)
	require.False(t, res.Limits.Network)
	require.ElementsMatch(t, []string{"timeout", "memory", "cpus"}, res.Limits.Clamped)
	require.Contains(t, res.Limits.Sources["memory"].String(), "limits.memory.max")
	require.Contains(t, res.Limits.Sources["network"].String(), "none")

	// A workspace outside the roots is refused before any container.
	r = cli(t, ws, nil, "", "--skills", root, "--policy", pol, "run", "--workspace", root, "greedy", "scripts/probe.py")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "not under")
	requireNoSkillContainers(t, "greedy")
}

// TestCLIPolicyGrantsExec: a skill without allowed-tools allows no commands,
// until the operator's policy grants one.
func TestCLIPolicyGrantsExec(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "nogrant", "", nil)
	ws := t.TempDir()
	r := cli(t, ws, nil, "", "--skills", root, "exec", "--workspace", ws, "nogrant", "--", "echo granted")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "no Bash entry")

	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("skills:\n  nogrant:\n    allowed-tools: Bash(echo:*)\n"), 0o644))
	r = cli(t, ws, nil, "", "--skills", root, "--policy", pol, "exec", "--workspace", ws, "nogrant", "--", "echo granted")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "granted\n", r.stdout)

	// The grant adds an entry; every other rule of the checker holds.
	r = cli(t, ws, nil, "", "--skills", root, "--policy", pol, "exec", "--workspace", ws, "nogrant", "--", "echo $(id)")
	require.Equal(t, 2, r.code, r.stderr)
	r = cli(t, ws, nil, "", "--skills", root, "--policy", pol, "exec", "--workspace", ws, "nogrant", "--", "id")
	require.Equal(t, 2, r.code, r.stderr)

	r = cli(t, ws, nil, "", "--skills", root, "--policy", pol, "policy", "check", "--json", "nogrant")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"granted_tools": "Bash(echo:*)"`)
	requireNoSkillContainers(t, "nogrant")
}
