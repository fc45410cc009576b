package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateExampleSkillsStrict(t *testing.T) {
	isolateEnv(t)
	r := cli(t, "", "validate", "--strict", exampleSkills)
	r.requireCode(t, exitOK)
	require.Contains(t, r.stdout, "valid (hello)")
	require.Contains(t, r.stdout, "valid (data-analysis)")
	require.NotContains(t, r.stdout, "INVALID")
	require.NotContains(t, r.stdout, "error:")
}

func TestValidateInvalidSkills(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	long := strings.Repeat("a", 70)
	writeSkill(t, root, "MySkill", frontmatter("MySkill"), "body\n", nil)
	writeSkill(t, root, "my_skill", frontmatter("my_skill"), "body\n", nil)
	writeSkill(t, root, "my--skill", frontmatter("my--skill"), "body\n", nil)
	writeSkill(t, root, long, frontmatter(long), "body\n", nil)
	writeSkill(t, root, "folder", frontmatter("other-name"), "body\n", nil)
	writeSkill(t, root, "badyaml", "name: [badyaml\ndescription: x", "body\n", nil)
	writeSkill(t, root, "nodesc", "name: nodesc", "body\n", nil)

	// A name other hosts refuse is an error with or without --strict, as
	// in the spec's reference validator; so are the rest.
	tests := []struct {
		dir  string
		want string // a fragment of the error line
	}{
		{"MySkill", `must be lowercase; use "myskill"`},
		{"my_skill", `contains "_"`},
		{"my--skill", "must not contain `--`"},
		{long, "70 characters; the spec allows at most 64"},
		{"folder", `does not match the folder name "folder"`},
		{"badyaml", "invalid YAML in frontmatter"},
		{"nodesc", "description"},
	}
	for _, tt := range tests {
		for _, args := range [][]string{{"validate"}, {"validate", "--strict"}} {
			t.Run(strings.Join(args, " ")+" "+tt.dir[:min(len(tt.dir), 10)], func(t *testing.T) {
				r := cli(t, "", append(args, filepath.Join(root, tt.dir))...)
				r.requireCode(t, exitInvalid)
				require.Contains(t, r.stdout, "INVALID")
				require.Regexp(t, `(?m)^  error: .*`+regexp.QuoteMeta(tt.want), r.stdout)
				require.NotRegexp(t, `(?m)^  warning: .*`+regexp.QuoteMeta(tt.want), r.stdout)
			})
		}
	}

	// Listing such a skill still works: the user can run what they
	// downloaded, and hears why other hosts would not.
	t.Run("list still lists", func(t *testing.T) {
		r := cli(t, "", "list", "--skills", filepath.Join(root, "MySkill"))
		r.requireCode(t, exitOK)
		require.Contains(t, r.stdout, "MySkill")
		require.Contains(t, r.stderr, "must be lowercase")
	})

	t.Run("unnamed skill", func(t *testing.T) {
		dir := filepath.Join(root, "badyaml")
		r := cli(t, "", "validate", dir)
		r.requireCode(t, exitInvalid)
		require.Regexp(t, "^"+regexp.QuoteMeta(dir)+": INVALID\n", r.stdout)
	})

	t.Run("one invalid among valid ones", func(t *testing.T) {
		r := cli(t, "", "validate", "--strict", exampleSkills, filepath.Join(root, "folder"))
		r.requireCode(t, exitInvalid)
		require.Contains(t, r.stdout, "valid (hello)")
		require.Contains(t, r.stdout, "INVALID (other-name)")
	})
}

func TestValidateStrictTurnsTopLevelExecutionFieldsIntoErrors(t *testing.T) {
	isolateEnv(t)
	dir := writeSkill(t, t.TempDir(), "toplevel", frontmatter("toplevel", "max_memory: 256", "version: \"1.0\""), "body\n", nil)

	tests := []struct {
		name   string
		args   []string
		code   int
		prefix string
	}{
		{"default warns", []string{"validate", dir}, exitOK, "warning"},
		{"strict refuses", []string{"validate", "--strict", dir}, exitInvalid, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, tt.code)
			// The message suggests the spec-conformant spelling.
			require.Regexp(t, "(?m)^  "+tt.prefix+": .*`max_memory`.*metadata:", r.stdout)
			require.Regexp(t, "(?m)^  "+tt.prefix+": .*`version`", r.stdout)
		})
	}
}

func TestValidateJSON(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "Bad", frontmatter("Bad"), "body\n", nil)

	tests := []struct {
		name      string
		path      string
		code      int
		wantValid map[string]bool
	}{
		{"examples", exampleSkills, exitOK, map[string]bool{"hello": true, "data-analysis": true, "csv-report": true}},
		{"invalid", filepath.Join(root, "Bad"), exitInvalid, map[string]bool{"Bad": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", "validate", "--json", "--strict", tt.path)
			r.requireCode(t, tt.code)

			// Raw decoding first: errors and warnings must be arrays, never null.
			var raw []map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw), r.stdout)
			require.Len(t, raw, len(tt.wantValid))
			for _, rep := range raw {
				for _, key := range []string{"path", "name", "valid", "errors", "warnings"} {
					require.Contains(t, rep, key)
				}
				require.Equal(t, byte('['), rep["errors"][0], "errors must be an array: %s", rep["errors"])
				require.Equal(t, byte('['), rep["warnings"][0], "warnings must be an array: %s", rep["warnings"])
			}

			var reports []struct {
				Path     string   `json:"path"`
				Name     string   `json:"name"`
				Valid    bool     `json:"valid"`
				Errors   []string `json:"errors"`
				Warnings []string `json:"warnings"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &reports))
			for _, rep := range reports {
				want, ok := tt.wantValid[rep.Name]
				require.True(t, ok, "unexpected skill %q", rep.Name)
				require.Equal(t, want, rep.Valid, "%+v", rep)
				require.Equal(t, !want, len(rep.Errors) > 0, "%+v", rep)
				require.NotEmpty(t, rep.Path)
			}
		})
	}
}

func TestValidateUsageErrors(t *testing.T) {
	isolateEnv(t)
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no path", []string{"validate"}, "at least one PATH"},
		{"no path json", []string{"validate", "--json"}, "at least one PATH"},
		{"nonexistent path", []string{"validate", missing}, "does-not-exist"},
		{"empty folder", []string{"validate", t.TempDir()}, "no skills found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitRefused)
			require.Contains(t, r.stderr, tt.want)
			require.Empty(t, r.stdout)
		})
	}
}
