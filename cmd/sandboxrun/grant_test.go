package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// --grant-tools is the operator's grant for the skill the command runs: a
// skill declaring no allowed-tools may then run what the grant allows, and
// nothing else: every part of a command is still checked.
func TestGrantTools(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "bare", frontmatter("bare"), "body\n", map[string]string{"scripts/test.py": "print(1)\n"})
	dry := func(args ...string) map[string]any {
		t.Helper()
		r := cli(t, "", append([]string{"exec", "--dry-run", "--json", "--skills", root}, args...)...)
		var d map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.stdout+r.stderr)
		return d
	}
	require.Equal(t, false, dry("bare", "--", "python scripts/test.py")["allowed"], "the skill declares nothing")
	d := dry("--grant-tools", "Bash(python:*)", "bare", "--", "python scripts/test.py")
	require.Equal(t, true, d["allowed"], d)
	require.Equal(t, false, dry("--grant-tools", "Bash(python:*)", "bare", "--", "python scripts/test.py; rm -rf /")["allowed"])
	require.Equal(t, false, dry("--grant-tools", "Bash(python:*)", "bare", "--", "curl http://example.com")["allowed"])

	r := cli(t, "", "exec", "--dry-run", "--skills", root, "--grant-tools", "Bash(python", "bare", "--", "python x.py")
	r.requireCode(t, exitRefused)
	require.Contains(t, r.stderr, "--grant-tools")
}
