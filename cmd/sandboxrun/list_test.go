package main

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestListFormats(t *testing.T) {
	isolateEnv(t)
	tests := []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{"table", func(t *testing.T, out string) {
			require.Regexp(t, `^NAME\s+DESCRIPTION\n`, out)
			require.Regexp(t, `(?m)^csv-report\s+Render a CSV file`, out)
			require.Regexp(t, `(?m)^data-analysis\s+Summary statistics`, out)
			require.Regexp(t, `(?m)^hello\s+Echoes its JSON`, out)
		}},
		{"json", func(t *testing.T, out string) {
			var entries []listEntry
			require.NoError(t, json.Unmarshal([]byte(out), &entries), out)
			require.Len(t, entries, 3)
			require.Equal(t, "csv-report", entries[0].Name)
			require.Equal(t, "data-analysis", entries[1].Name)
			require.Equal(t, "hello", entries[2].Name)
			require.True(t, strings.HasPrefix(entries[2].Description, "Echoes its JSON arguments"))
			require.True(t, filepath.IsAbs(entries[2].Location), entries[2].Location)
			require.Equal(t, "SKILL.md", filepath.Base(entries[2].Location))
		}},
		{"xml", func(t *testing.T, out string) {
			require.True(t, strings.HasPrefix(out, "<available_skills>\n"), out)
			require.True(t, strings.HasSuffix(out, "</available_skills>\n"), out)
			var doc struct {
				XMLName xml.Name `xml:"available_skills"`
				Skills  []struct {
					Name        string `xml:"name"`
					Description string `xml:"description"`
					Location    string `xml:"location"`
				} `xml:"skill"`
			}
			require.NoError(t, xml.Unmarshal([]byte(out), &doc), out)
			require.Len(t, doc.Skills, 3)
			require.Equal(t, "hello", doc.Skills[2].Name)
			require.True(t, filepath.IsAbs(doc.Skills[2].Location))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			r := cli(t, "", "list", "--skills", exampleSkills, "--format", tt.format)
			r.requireCode(t, exitOK)
			require.Empty(t, r.stderr)
			tt.check(t, r.stdout)
		})
	}
}

func TestListXMLEscapes(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "markup", "name: markup\ndescription: 'Compares a < b & c > d in </description><injected>'", "body\n", nil)

	r := cli(t, "", "list", "--skills", root, "--format", "xml")
	r.requireCode(t, exitOK)
	require.Contains(t, r.stdout, "<description>Compares a &lt; b &amp; c &gt; d in &lt;/description&gt;&lt;injected&gt;</description>")
	require.NotContains(t, r.stdout, "<injected>")

	var doc struct {
		Skills []struct {
			Description string `xml:"description"`
		} `xml:"skill"`
	}
	require.NoError(t, xml.Unmarshal([]byte(r.stdout), &doc))
	require.Len(t, doc.Skills, 1)
	require.Equal(t, "Compares a < b & c > d in </description><injected>", doc.Skills[0].Description)
}

func TestListSkipsBrokenSkill(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "good", frontmatter("good"), "body\n", nil)
	writeSkill(t, root, "broken", "name: [broken", "body\n", nil)

	r := cli(t, "", "list", "--skills", root, "--format", "json")
	r.requireCode(t, exitOK)
	var entries []listEntry
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &entries), r.stdout)
	require.Len(t, entries, 1)
	require.Equal(t, "good", entries[0].Name)
	require.Contains(t, r.stderr, "skipping")
	require.Contains(t, r.stderr, filepath.Join("broken", "SKILL.md"))
}

func TestListSkillsRoot(t *testing.T) {
	isolateEnv(t)
	envRoot := t.TempDir()
	writeSkill(t, envRoot, "from-env", frontmatter("from-env"), "body\n", nil)
	flagRoot := t.TempDir()
	writeSkill(t, flagRoot, "from-flag", frontmatter("from-flag"), "body\n", nil)
	t.Setenv("SANDBOXRUN_SKILLS", envRoot)

	tests := []struct {
		name string
		args []string
		want string
		not  string
	}{
		{"environment when no flag", []string{"list"}, "from-env", "from-flag"},
		{"flag wins over environment", []string{"list", "--skills", flagRoot}, "from-flag", "from-env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitOK)
			require.Contains(t, r.stdout, tt.want)
			require.NotContains(t, r.stdout, tt.not)
		})
	}
}

func TestListUsageErrors(t *testing.T) {
	isolateEnv(t)
	missing := filepath.Join(t.TempDir(), "nowhere")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"bogus format", []string{"list", "--skills", exampleSkills, "--format", "bogus"}, []string{`"bogus"`, "table, json or xml"}},
		{"missing root", []string{"list", "--skills", missing}, []string{missing, "--skills"}},
		{"extra argument", []string{"list", "--skills", exampleSkills, "hello"}, []string{"no arguments"}},
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

	t.Run("missing root from the environment", func(t *testing.T) {
		t.Setenv("SANDBOXRUN_SKILLS", missing)
		r := cli(t, "", "list")
		r.requireCode(t, exitRefused)
		require.Contains(t, r.stderr, "SANDBOXRUN_SKILLS")
		require.Contains(t, r.stderr, missing)
	})
}
