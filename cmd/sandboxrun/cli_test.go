package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exampleSkills is the repository's skills/ folder, seen from this package.
const exampleSkills = "../../skills"

// cliResult is what one in-process invocation of the CLI produced.
type cliResult struct {
	code        int
	stdout      string
	stderr      string
	description string
}

// cli runs sandboxrun in-process with args and stdin, the way main does.
func cli(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, streams{in: strings.NewReader(stdin), out: &out, err: &errb})
	return cliResult{code: code, stdout: out.String(), stderr: errb.String(), description: strings.Join(args, " ")}
}

// requireCode fails with the whole output when the exit status is not want,
// so a wrong status explains itself.
func (r cliResult) requireCode(t *testing.T, want int) {
	t.Helper()
	require.Equal(t, want, r.code, "sandboxrun %s\nstdout:\n%s\nstderr:\n%s", r.description, r.stdout, r.stderr)
}

// isolateEnv clears the variables the CLI reads from the environment, so a
// developer's shell cannot change what a test sees, and points Docker at a
// socket that does not exist: a test that reached Docker would fail with exit
// status 3 instead of the 2 a refusal gives.
func isolateEnv(t *testing.T) {
	t.Helper()
	t.Setenv("SANDBOXRUN_SKILLS", "")
	t.Setenv("SANDBOXRUN_AUDIT_LOG", "")
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	t.Setenv("DOCKER_CONTEXT", "")
}

// writeSkill creates root/dir/SKILL.md with the given frontmatter lines and
// body, plus the named scripts (path relative to the skill → content).
// It returns the skill folder.
func writeSkill(t *testing.T, root, dir, frontmatter, body string, scripts map[string]string) string {
	t.Helper()
	skillDir := filepath.Join(root, dir)
	require.NoError(t, os.MkdirAll(skillDir, 0o755))
	content := "---\n" + strings.TrimSpace(frontmatter) + "\n---\n" + body
	require.NoError(t, os.WriteFile(filepath.Join(skillDir, "SKILL.md"), []byte(content), 0o644))
	for rel, src := range scripts {
		p := filepath.Join(skillDir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	return skillDir
}

// frontmatter builds a minimal valid frontmatter for name plus extra lines.
func frontmatter(name string, extra ...string) string {
	lines := append([]string{"name: " + name, "description: A test skill named " + name + "."}, extra...)
	return strings.Join(lines, "\n")
}
