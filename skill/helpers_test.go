package skill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeSkill creates root/folder with a SKILL.md holding skillMD and the
// given extra files (slash paths relative to the folder), and returns the
// folder.
func writeSkill(t *testing.T, root, folder, skillMD string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, folder)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(skillMD), 0o644))
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	}
	return dir
}

// doc builds a SKILL.md from frontmatter lines and a body.
func doc(front, body string) string {
	return "---\n" + front + "---\n" + body
}

const minimalFront = "name: demo\ndescription: Does demo things. Use it for demos.\n"

// decodeFront parses a frontmatter text and returns the manifest and the
// problems, failing the test when the frontmatter itself does not parse.
func decodeFront(t *testing.T, front string) (Manifest, []problem) {
	t.Helper()
	s, probs, err := parseSkillFile(strings.NewReader(doc(front, "")), "SKILL.md", true)
	require.NoError(t, err)
	return s.Manifest, probs
}

// messages returns the problems of one severity as strings.
func messages(probs []problem, sev severity) []string {
	var out []string
	for _, p := range probs {
		if p.sev == sev {
			out = append(out, p.String())
		}
	}
	return out
}

// requireOneContaining asserts that exactly one message contains want.
func requireOneContaining(t *testing.T, msgs []string, want string) {
	t.Helper()
	n := 0
	for _, m := range msgs {
		if strings.Contains(m, want) {
			n++
		}
	}
	require.Equalf(t, 1, n, "want exactly one message containing %q in %q", want, msgs)
}
