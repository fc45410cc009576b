package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPolicyShow(t *testing.T) {
	isolateEnv(t)
	t.Setenv("SANDBOXRUN_POLICY", "")
	r := cli(t, "", "policy", "show", "--policy", strictPolicy)
	r.requireCode(t, 0)
	require.Contains(t, r.stdout, "strict-policy.yaml (sha256 ")
	require.Regexp(t, `limits.memory.max\s+128MiB\s+line 4`, r.stdout)
	require.Regexp(t, `network\s+none\s+line 7`, r.stdout)

	r = cli(t, "", "policy", "show", "--json")
	r.requireCode(t, 0)
	var shown struct {
		Source   string `json:"source"`
		Settings []struct{ Key, Value, From string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	if _, err := os.Stat("/etc/sandboxrun/policy.yaml"); err != nil {
		require.Equal(t, "builtin", shown.Source)
	}
	require.NotEmpty(t, shown.Settings)

	// $SANDBOXRUN_POLICY is read when --policy is not given.
	t.Setenv("SANDBOXRUN_POLICY", strictPolicy)
	r = cli(t, "", "policy", "show")
	r.requireCode(t, 0)
	require.Contains(t, r.stdout, "strict-policy.yaml")
}

func TestPolicyFileErrorsStopEveryCommand(t *testing.T) {
	isolateEnv(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("limits:\n  memory: {max: 512}\n"), 0o644))
	for _, args := range [][]string{{"policy", "show"}, {"list", "--skills", exampleSkills}, {"run", "--skills", exampleSkills, "hello", "scripts/echo.py"}} {
		r := cli(t, "", append(args, "--policy", bad)...)
		r.requireCode(t, 2)
		require.Contains(t, r.stderr, "bad.yaml: line 2")
		require.Contains(t, r.stderr, "512Mi")
	}
}

func TestPolicyCheck(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "greedy", "name: greedy\ndescription: wants everything\nallowed-tools: Write\nmetadata:\n  max_memory: \"4096\"\n  network_access: \"true\"", "Body.\n", nil)
	pol := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("limits:\n  memory: {max: 1Gi}\non_exceed: clamp\nnetwork: none\nworkspace: {write: read-only}\nskills:\n  greedy:\n    allowed-tools: Bash(jq:*)\n"), 0o644))
	r := cli(t, "", "--skills", root, "--policy", pol, "policy", "check", "--json", "greedy")
	r.requireCode(t, 0)
	var checks []struct {
		Allowed      bool   `json:"allowed"`
		Workspace    string `json:"workspace"`
		AllowedTools string `json:"allowed_tools"`
		Limits       struct {
			MemoryBytes int64    `json:"memory_bytes"`
			Network     bool     `json:"network"`
			Clamped     []string `json:"clamped"`
		} `json:"limits"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &checks))
	require.Len(t, checks, 1)
	c := checks[0]
	require.True(t, c.Allowed)
	require.Equal(t, int64(1<<30), c.Limits.MemoryBytes)
	require.False(t, c.Limits.Network)
	require.Equal(t, []string{"memory"}, c.Limits.Clamped)
	require.Contains(t, c.Workspace, "read-only")
	require.Equal(t, "Write, Bash(jq:*)", c.AllowedTools)

	// Under on_exceed: refuse the same skill would not run: exit 1.
	require.NoError(t, os.WriteFile(pol, []byte("limits:\n  memory: {max: 1Gi}\non_exceed: refuse\n"), 0o644))
	r = cli(t, "", "--skills", root, "--policy", pol, "policy", "check", "greedy")
	r.requireCode(t, 1)
	require.Contains(t, r.stdout, "REFUSED")
	require.Contains(t, r.stdout, "limits.memory.max")
}
