package main

import (
	"encoding/json"
	"encoding/xml"
	"testing"

	"github.com/stretchr/testify/require"
)

// A skill with disable-model-invocation is left out of what a model is
// shown (json, xml) and marked in the operator's table; when_to_use comes
// next to the description.
func TestListHidesModelDisabledSkills(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "shown", frontmatter("shown", "when_to_use: When a test asks."), "body\n", nil)
	writeSkill(t, root, "hidden", frontmatter("hidden", "metadata:", "  disable-model-invocation: \"true\""), "body\n", nil)

	r := cli(t, "", "list", "--skills", root, "--format", "json")
	r.requireCode(t, exitOK)
	var entries []listEntry
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &entries), r.stdout)
	require.Len(t, entries, 1)
	require.Equal(t, "shown", entries[0].Name)
	require.Equal(t, "When a test asks.", entries[0].WhenToUse)

	r = cli(t, "", "list", "--skills", root, "--format", "xml")
	r.requireCode(t, exitOK)
	var doc struct {
		Skills []struct {
			Name      string `xml:"name"`
			WhenToUse string `xml:"when_to_use"`
		} `xml:"skill"`
	}
	require.NoError(t, xml.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Len(t, doc.Skills, 1)
	require.Equal(t, "shown", doc.Skills[0].Name)
	require.Equal(t, "When a test asks.", doc.Skills[0].WhenToUse)

	r = cli(t, "", "list", "--skills", root)
	r.requireCode(t, exitOK)
	require.Contains(t, r.stdout, "(hidden from models)")
}
