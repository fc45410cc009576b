package skill

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseInlineMetadata(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		deps     []string
		lines    []int
		requires string
		none     bool
	}{
		{
			name: "spec example",
			src: `# /// script
# requires-python = ">=3.11"
# dependencies = [
#   "requests<3",
#   "rich",
# ]
# ///

import requests
`,
			deps: []string{"requests<3", "rich"}, lines: []int{4, 5}, requires: ">=3.11",
		},
		{
			name: "after a shebang and a docstring, CRLF, comments and literal strings",
			src:  "#!/usr/bin/env python3\r\n\"\"\"Doc.\"\"\"\r\n# /// script\r\n# dependencies = ['tabulate==0.9.0', # pinned\r\n#   \"x\"] # end\r\n#\r\n# [tool.uv]\r\n# exclude-newer = \"2024-01-01T00:00:00Z\"\r\n# sources = { torch = { index = \"pytorch\" } }\r\n# ///\r\nprint(1)\r\n",
			deps: []string{"tabulate==0.9.0", "x"}, lines: []int{4, 5},
		},
		{
			name: "no block",
			src:  "# just a comment\nprint('hi')\n",
			none: true,
		},
		{
			name: "other block types are ignored",
			src:  "# /// pyproject\n# [project]\n# ///\n",
			none: true,
		},
		{
			name: "what uv writes: [[tool.uv.index]], inline tables, multi-line strings, dates",
			src: `#!/usr/bin/env -S uv run --script
# /// script
# requires-python = """>=3.10"""
# dependencies = [
#   """tabulate>=0.9""",
#   'rich',  # literal string
# ]
#
# [tool.uv]
# exclude-newer = 2024-06-01T00:00:00Z
# sources = { torch = { index = "pytorch" } }
#
# [[tool.uv.index]]
# name = "pytorch"
# url = "https://download.pytorch.org/whl/cpu"
# explicit = true
#
# [[tool.uv.index]]
# name = "internal"
# url = "https://pypi.example.com/simple"
# ///
import tabulate
`,
			deps: []string{"tabulate>=0.9", "rich"}, lines: []int{5, 6}, requires: ">=3.10",
		},
		{
			name:     "empty dependencies and escapes in strings",
			src:      "# /// script\n# dependencies = []\n# requires-python = \"\\u003e=3.8\"\n# ///\n",
			requires: ">=3.8",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseInlineMetadata(strings.NewReader(tt.src), "s.py")
			require.NoError(t, err)
			if tt.none {
				require.Nil(t, m)
				return
			}
			require.NotNil(t, m)
			require.Equal(t, tt.deps, m.Dependencies)
			require.Equal(t, tt.lines, m.DependencyLines)
			require.Equal(t, tt.requires, m.RequiresPython)
			require.Equal(t, "s.py", m.Path)
		})
	}
}

func TestParseInlineMetadataErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		line int
		want string
	}{
		{"a later closing line in the same comment run", "# /// script\n# dependencies = [\"a\"]\n# ///\n#\n# ///\nx = 1\n", 3, "closes at the last `# ///` of the comment lines that follow it (line 5)"},
		{"unclosed", "# /// script\n# dependencies = []\nimport x\n", 1, "not closed"},
		{"unclosed at end of file", "x = 1\n# /// script\n# dependencies = []\n", 2, "not closed"},
		{"duplicate block", "# /// script\n# ///\n\n# /// script\n# ///\n", 4, "second `# /// script` block (the first opens at line 1)"},
		{"dependencies not a list", "# /// script\n# dependencies = \"requests\"\n# ///\n", 2, "`dependencies` is a string"},
		{"dependency not a string", "# /// script\n# dependencies = [\n#  \"a\",\n#  3,\n# ]\n# ///\n", 4, "`dependencies` has a number"},
		{"requires-python not a string", "# /// script\n# requires-python = 3.11\n# ///\n", 2, "`requires-python` is a number"},
		{"requires-python not a specifier", "# /// script\n# requires-python = \"python3; rm -rf\"\n# ///\n", 2, "write a version specifier"},
		{"unknown key", "# /// script\n# dependencys = []\n# ///\n", 2, "unknown key `dependencys`"},
		{"duplicate key", "# /// script\n# dependencies = []\n# dependencies = []\n# ///\n", 3, "key dependencies is already defined"},
		{"unterminated string", "# /// script\n# dependencies = [\"a]\n# ///\n", 2, "unterminated basic string"},
		{"unclosed list", "# /// script\n# dependencies = [\"a\",\n# ///\n", 2, "array is incomplete"},
		{"garbage after value", "# /// script\n# dependencies = [] []\n# ///\n", 2, "expected newline"},
		{"bad escape", "# /// script\n# requires-python = \"\\q\"\n# ///\n", 2, "invalid escape character"},
		{"control character", "# /// script\n# dependencies = [\"a\\u0000\"]\n# ///\n", 2, "control character"},
		{"tool as a value", "# /// script\n# tool = 1\n# ///\n", 2, "unknown key `tool`"},
		{"missing equals", "# /// script\n# dependencies\n# ///\n", 2, "expected '=' after key"},
		{"table outside tool", "# /// script\n# dependencies = []\n# [project]\n# name = \"x\"\n# ///\n", 3, "unknown table `[project]`"},
		{"dependencies as a table", "# /// script\n# [dependencies]\n# a = \"b\"\n# ///\n", 2, "unknown table `[dependencies]`"},
		{"dependencies as an inline table", "# /// script\n# dependencies = { a = \"b\" }\n# ///\n", 2, "`dependencies` is a table"},
		{"multi-line requirement list item", "# /// script\n# dependencies = [\n#   \"a\",\n#   { b = 1 },\n# ]\n# ///\n", 4, "`dependencies` has a table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseInlineMetadata(strings.NewReader(tt.src), "scripts/x.py")
			require.Error(t, err)
			require.ErrorIs(t, err, ErrInlineMetadata)
			var me *InlineMetadataError
			require.True(t, errors.As(err, &me))
			require.Equal(t, tt.line, me.Line, "line of %q", err)
			require.Equal(t, "scripts/x.py", me.Path)
			require.Contains(t, err.Error(), tt.want)
			require.True(t, strings.HasPrefix(err.Error(), "scripts/x.py:"), err.Error())
		})
	}
}

func TestParseInlineMetadataLongLines(t *testing.T) {
	long := strings.Repeat("x", maxMetadataLine+10)
	t.Run("outside a block a long line is data", func(t *testing.T) {
		src := "DATA = '" + long + "'\n# /// script\n# dependencies = [\"a\"]\n# ///\n"
		m, err := ParseInlineMetadata(strings.NewReader(src), "s.py")
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, m.Dependencies)
		require.Equal(t, 2, m.Line)
	})
	t.Run("inside a block it is an error", func(t *testing.T) {
		src := "# /// script\n# " + long + "\n# ///\n"
		_, err := ParseInlineMetadata(strings.NewReader(src), "s.py")
		require.ErrorIs(t, err, ErrInlineMetadata)
		require.Contains(t, err.Error(), "s.py:2:")
	})
}

// FuzzParseInlineMetadata checks that any script either gives an
// *InlineMetadataError or metadata whose every value points at a line inside
// its block, with no control character in what reaches pip.
func FuzzParseInlineMetadata(f *testing.F) {
	f.Add("# /// script\n# dependencies = [\"a\", 'b']\n# requires-python = \">=3\"\n# ///\n")
	f.Add("# /// script\n# [tool.x]\n# a = { b = [1, 2.5, true] }\n# ///\n")
	f.Add("# /// script\n# dependencies = [\"\"\"a\n# b\"\"\"]\n# [[tool.uv.index]]\n# url = \"x\"\n# [[tool.uv.index]]\n# ///\n")
	f.Add("# /// script\n# dependencies = [\"a\\u0000\", { a = 1 }]\n# ///\n")
	f.Fuzz(func(t *testing.T, src string) {
		m, err := ParseInlineMetadata(strings.NewReader(src), "f.py")
		if err != nil {
			require.ErrorIs(t, err, ErrInlineMetadata)
			var me *InlineMetadataError
			require.ErrorAs(t, err, &me)
			require.Positive(t, me.Line)
			return
		}
		if m == nil {
			return
		}
		require.Len(t, m.DependencyLines, len(m.Dependencies))
		lines := strings.Count(src, "\n") + 1
		inBlock := func(l int) {
			require.Greater(t, l, m.Line, "a value's line is after the block's opening line")
			require.LessOrEqual(t, l, lines)
		}
		for i, d := range m.Dependencies {
			inBlock(m.DependencyLines[i])
			require.False(t, hasControl(d), "dependency %q", d)
		}
		if m.RequiresPython != "" {
			inBlock(m.RequiresPythonLine)
		}
	})
}
