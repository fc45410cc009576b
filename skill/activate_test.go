package skill

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestActivate(t *testing.T) {
	front := "name: demo\ndescription: Demo.\nallowed-tools: Bash(python3:*) Read\n"
	body := "Run `python3 {baseDir}/scripts/run.py`; data in {baseDir}/assets.\n"
	dir := writeSkill(t, t.TempDir(), "demo", doc(front, body), map[string]string{
		"scripts/run.py":          "",
		"scripts/lib/util.py":     "",
		"scripts/.cache/x":        "",
		"scripts/.hidden.py":      "",
		"references/guide.md":     "",
		"assets/b.csv":            "",
		"assets/a/nested.txt":     "",
		"other/not-listed.txt":    "",
		"references/deep/x/y.md":  "",
		"assets/.gitkeep":         "",
		"references/REFERENCE.md": "",
	})
	require.NoError(t, os.Symlink("run.py", filepath.Join(dir, "scripts", "alias.py")))

	meta, err := LoadMeta(dir)
	require.NoError(t, err)
	require.Empty(t, meta.Body)
	a, err := meta.Activate() // reads the body LoadMeta skipped
	require.NoError(t, err)

	require.Equal(t, "demo", a.Name)
	require.Equal(t, "/skills/demo", a.BaseDir)
	require.Equal(t, "Run `python3 /skills/demo/scripts/run.py`; data in /skills/demo/assets.\n", a.Body)
	require.Equal(t, []string{"scripts/alias.py", "scripts/lib/util.py", "scripts/run.py"}, a.Scripts)
	require.Equal(t, []string{"references/REFERENCE.md", "references/deep/x/y.md", "references/guide.md"}, a.References)
	require.Equal(t, []string{"assets/a/nested.txt", "assets/b.csv"}, a.Assets)
	require.Len(t, a.AllowedTools, 2)
	require.Equal(t, "Bash", a.AllowedTools[0].Name)
	require.Equal(t, "python3:*", a.AllowedTools[0].Spec)

	b, err := json.Marshal(a)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, []any{
		map[string]any{"name": "Bash", "spec": "python3:*"},
		map[string]any{"name": "Read"},
	}, got["allowed_tools"])
	require.Equal(t, "/skills/demo", got["base_dir"])
}

func TestActivateEmptySkill(t *testing.T) {
	dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, "plain\n"), nil)
	s, err := Load(dir)
	require.NoError(t, err)
	a, err := s.Activate()
	require.NoError(t, err)
	require.Equal(t, "plain\n", a.Body)
	b, err := json.Marshal(a)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	for _, k := range []string{"scripts", "references", "assets", "allowed_tools"} {
		require.Equal(t, []any{}, got[k], k)
	}
}

func TestActivateDoesNotFollowSymlinkedFolders(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x"), 0o644))
	dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), nil)
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "assets")))
	s, err := Load(dir)
	require.NoError(t, err)
	a, err := s.Activate()
	require.NoError(t, err)
	require.Empty(t, a.Assets)
}
