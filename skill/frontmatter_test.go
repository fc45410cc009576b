package skill

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseFrontmatterErrors(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		sentinel error
		line     int
		msg      string
	}{
		{"empty file", "", ErrNoFrontmatter, 1, "must start with a `---` line"},
		{"no fence", "# Title\n\nname: x\n", ErrNoFrontmatter, 1, "missing frontmatter"},
		{"leading blank line", "\n---\nname: x\n---\n", ErrNoFrontmatter, 1, "missing frontmatter"},
		{"fence with text", "--- name: x\n---\n", ErrNoFrontmatter, 1, "missing frontmatter"},
		{"unclosed", "---\nname: x\ndescription: y\n", ErrUnclosedFrontmatter, 1, "no closing `---`"},
		{"unclosed no newline", "---", ErrUnclosedFrontmatter, 1, "no closing"},
		{"empty frontmatter", "---\n---\nbody\n", ErrNotMapping, 1, "frontmatter is empty"},
		{"comment only", "---\n# nothing\n---\n", ErrNotMapping, 1, "frontmatter is empty"},
		{"list", "---\n- a\n- b\n---\n", ErrNotMapping, 2, "YAML list, not a mapping"},
		{"scalar", "---\njust text\n---\n", ErrNotMapping, 2, "YAML scalar, not a mapping"},
		{"invalid yaml", "---\nname: x\ndescription: a: b\n---\n", ErrInvalidYAML, 3, "mapping values are not allowed"},
		{"bad indentation", "---\nname: x\n  description: y\nlicense: [\n---\n", ErrInvalidYAML, 0, "invalid YAML in frontmatter"},
		{"tab indentation", "---\nmetadata:\n\tversion: 1\n---\n", ErrInvalidYAML, 3, "invalid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseSkillFile(strings.NewReader(tt.content), "x/SKILL.md", true)
			require.ErrorIs(t, err, tt.sentinel)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "x/SKILL.md", pe.Path)
			if tt.line != 0 {
				require.Equal(t, tt.line, pe.Line)
			}
			require.Contains(t, err.Error(), tt.msg)
			require.True(t, strings.HasPrefix(err.Error(), "x/SKILL.md"), "error names the file: %s", err)
		})
	}
}

func TestParseFrontmatterInvalidYAMLLineIsFileLine(t *testing.T) {
	content := "---\nname: x\ndescription: y\nlicense: MIT\nbad: [unclosed\n---\n"
	_, _, err := parseSkillFile(strings.NewReader(content), "SKILL.md", true)
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, ErrInvalidYAML)
	// The bad line is file line 5. yaml.v3 reports parser (not scanner)
	// errors one line early, so accept the line before it too; what matters
	// is that the number is a line of the file, past the opening fence.
	require.GreaterOrEqual(t, pe.Line, 4)
	require.LessOrEqual(t, pe.Line, 5)
	require.Contains(t, pe.Error(), "SKILL.md:")
}

func TestParseFrontmatterAccepts(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		body     string
		bodyLine int
	}{
		{"plain", "---\n" + minimalFront + "---\n# Body\n", "# Body\n", 5},
		{"crlf", "---\r\nname: demo\r\ndescription: d\r\n---\r\n# Body\r\nline\r\n", "# Body\nline\n", 5},
		{"bom", "\xef\xbb\xbf---\n" + minimalFront + "---\nbody", "body", 5},
		{"fence trailing blanks", "--- \t\n" + minimalFront + "---  \nbody\n", "body\n", 5},
		{"no body", "---\n" + minimalFront + "---", "", 5},
		{"dashes in body", "---\n" + minimalFront + "---\n---\nmore\n", "---\nmore\n", 5},
		{"fence inside block scalar ends frontmatter only at column 0",
			"---\nname: demo\ndescription: |\n  text\n  ---x\n---\nb\n", "b\n", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := parseSkillFile(strings.NewReader(tt.content), "SKILL.md", true)
			require.NoError(t, err)
			require.Equal(t, "demo", s.Manifest.Name)
			require.Equal(t, tt.body, s.Body)
			require.Equal(t, tt.bodyLine, s.BodyLine)
		})
	}
}

func TestParseFrontmatterTooLarge(t *testing.T) {
	big := "---\nname: demo\ndescription: " + strings.Repeat("x", maxFrontmatterBytes) + "\n---\n"
	_, _, err := parseSkillFile(strings.NewReader(big), "SKILL.md", false)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Contains(t, err.Error(), "closing `---`")

	body := doc(minimalFront, strings.Repeat("y", maxSkillFileBytes+1))
	_, _, err = parseSkillFile(strings.NewReader(body), "SKILL.md", true)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Contains(t, err.Error(), "references/")
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestLoadMetaStopsAtClosingFence(t *testing.T) {
	front := doc(minimalFront, "")
	// A body far larger than bufio's read-ahead, and not valid UTF-8.
	body := bytes.Repeat([]byte("\xff\xfe not text \x00\n"), 200000)
	cr := &countingReader{r: io.MultiReader(strings.NewReader(front), bytes.NewReader(body))}
	s, _, err := parseSkillFile(cr, "SKILL.md", false)
	require.NoError(t, err)
	require.Equal(t, "demo", s.Manifest.Name)
	require.Empty(t, s.Body)
	require.Less(t, cr.n, len(front)+8192, "LoadMeta read into the body")

	// The same through the file system.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), append([]byte(front), body...), 0o644))
	meta, err := LoadMeta(dir)
	require.NoError(t, err)
	require.Empty(t, meta.Body)
	full, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, full.Body, len(body))
}

func TestLoadMetaIgnoresBrokenBody(t *testing.T) {
	// The frontmatter is fine; the body is huge. LoadMeta must not care.
	dir := t.TempDir()
	content := doc(minimalFront, strings.Repeat("z", maxSkillFileBytes+10))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(content), 0o644))
	_, err := LoadMeta(dir)
	require.NoError(t, err)
	_, err = Load(dir)
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestParseErrorUnwrap(t *testing.T) {
	err := error(&ParseError{Path: "p", Line: 3, Msg: "m", Err: ErrInvalidYAML})
	require.True(t, errors.Is(err, ErrInvalidYAML))
	require.Equal(t, "p:3: m", err.Error())
	require.Equal(t, "p: m", (&ParseError{Path: "p", Msg: "m"}).Error())
}
