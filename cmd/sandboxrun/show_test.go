package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShowText(t *testing.T) {
	isolateEnv(t)
	hello, err := filepath.Abs(filepath.Join(exampleSkills, "hello"))
	require.NoError(t, err)

	tests := []struct {
		name string
		args []string
	}{
		{"by name", []string{"show", "--skills", exampleSkills, "hello"}},
		{"by path", []string{"show", hello}},
		{"by name from the environment", []string{"show", "hello"}},
	}
	t.Setenv("SANDBOXRUN_SKILLS", exampleSkills)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitOK)
			require.Contains(t, r.stdout, "# hello\n")
			require.Contains(t, r.stdout, "Base directory: /skills/hello\n")
			require.Contains(t, r.stdout, "/skills/hello/scripts/echo.py")
			require.NotContains(t, r.stdout, "{baseDir}")
			for _, s := range []string{"scripts/echo.py", "scripts/echo.sh", "scripts/echo.js"} {
				require.Regexp(t, `(?m)^  `+s+`$`, r.stdout)
			}
			require.Regexp(t, `(?m)^  Bash\(python3:\*\)$`, r.stdout)
		})
	}
}

func TestShowJSON(t *testing.T) {
	isolateEnv(t)
	r := cli(t, "", "show", "--json", "--skills", exampleSkills, "hello")
	r.requireCode(t, exitOK)

	var act struct {
		Name         string            `json:"name"`
		BaseDir      string            `json:"base_dir"`
		Body         string            `json:"body"`
		Scripts      []string          `json:"scripts"`
		References   []string          `json:"references"`
		Assets       []string          `json:"assets"`
		AllowedTools []json.RawMessage `json:"allowed_tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &act), r.stdout)
	require.Equal(t, "hello", act.Name)
	require.Equal(t, "/skills/hello", act.BaseDir)
	require.Contains(t, act.Body, "/skills/hello/scripts/echo.py")
	require.NotContains(t, act.Body, "{baseDir}")
	require.Equal(t, []string{"scripts/echo.js", "scripts/echo.py", "scripts/echo.sh"}, act.Scripts)
	require.NotNil(t, act.References, "empty lists are [] not null")
	require.NotNil(t, act.Assets, "empty lists are [] not null")
	require.Len(t, act.AllowedTools, 3)
}

func TestShowRefusals(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "broken", "name: [broken", "body\n", nil)

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown skill", []string{"show", "--skills", exampleSkills, "no-such-skill"}, []string{`"no-such-skill"`, "it holds: csv-report, data-analysis, hello"}},
		{"broken skill", []string{"show", "--skills", root, "broken"}, []string{"invalid YAML", "sandboxrun validate"}},
		{"no skill", []string{"show"}, []string{"one SKILL"}},
		{"two skills", []string{"show", "a", "b"}, []string{"one SKILL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitRefused)
			require.Empty(t, r.stdout)
			for _, w := range tt.want {
				require.Contains(t, r.stderr, w)
			}
		})
	}
}
