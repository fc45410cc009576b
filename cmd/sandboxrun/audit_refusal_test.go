package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
)

// Refused requests are audited too: a host wants to see what a model tried,
// not only what ran. None of these reaches Docker (isolateEnv).
func TestRefusalsAreAudited(t *testing.T) {
	isolateEnv(t)
	ws := t.TempDir()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	common := []string{"--skills", exampleSkills, "--workspace", ws, "--audit-log", audit}

	cli(t, "", append([]string{"run"}, append(common, "hello", "../SKILL.md", "--args", `{"secret":"s3cret"}`)...)...).requireCode(t, exitRefused)
	cli(t, "", append([]string{"exec"}, append(common, "hello", "--", "curl http://x")...)...).requireCode(t, exitRefused)
	cli(t, "", append([]string{"python"}, append(common, "--timeout", "11m", "hello", "--code", "print(1)")...)...).requireCode(t, exitRefused)

	f, err := os.Open(audit)
	require.NoError(t, err)
	defer f.Close()
	var recs []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		require.NotContains(t, sc.Text(), "s3cret", "arguments never reach the audit log")
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		recs = append(recs, rec)
	}
	require.Len(t, recs, 3)
	for _, rec := range recs {
		require.Equal(t, true, rec["refused"])
		require.Equal(t, "hello", rec["skill"])
		require.NotEmpty(t, rec["error"])
		require.NotEmpty(t, rec["args_sha256"])
		require.Equal(t, "builtin", rec["policy_digest"])
	}
	require.Equal(t, "../SKILL.md", recs[0]["script"])
	var want []any
	for _, a := range bashcheck.BashArgv("curl http://x") {
		want = append(want, a)
	}
	require.Equal(t, want, recs[1]["argv"])
	require.Contains(t, recs[1]["error"], "curl")
	require.Contains(t, recs[2]["error"], "timeout")
}
